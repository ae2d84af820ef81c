"""Parse a Prometheus text exposition (standard input) with the reference Python client's
parser, which refuses what the format does not allow; print every sample as JSON lines:
{"name", "labels", "value", "family", "type"}. Exit 1 (the error on stderr) if it does not parse."""

import json
import sys

from prometheus_client.parser import text_string_to_metric_families


def main() -> int:
    text = sys.stdin.read()
    try:
        families = list(text_string_to_metric_families(text))
    except Exception as e:  # the parser raises ValueError and friends on a bad line
        print(f"does not parse: {e!r}", file=sys.stderr)
        return 1
    seen = set()
    for f in families:
        if f.name in seen:
            print(f"family {f.name} appears twice", file=sys.stderr)
            return 1
        seen.add(f.name)
        if f.type == "unknown":
            print(f"family {f.name} has no TYPE", file=sys.stderr)
            return 1
        for s in f.samples:
            print(json.dumps({"name": s.name, "labels": s.labels, "value": s.value,
                              "family": f.name, "type": f.type}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

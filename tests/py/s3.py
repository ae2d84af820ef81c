#!/usr/bin/env python3
"""A small S3 client of its own (path-style requests, AWS Signature Version 4), Python
standard library only: what the suite uses to read and write the shared bucket server
(tests/servers.sh) independently of the service's object-store client, for instance to
search every object a backend wrote.

    python3 tests/py/s3.py put KEY FILE | get KEY | headers KEY | list [PREFIX] | delete KEY

The endpoint, bucket and keys come from CONDUCT_TEST_S3_ENDPOINT, CONDUCT_TEST_S3_BUCKET,
CONDUCT_TEST_S3_ACCESS_KEY and CONDUCT_TEST_S3_SECRET_KEY; the region is us-east-1.
`get` writes the object's bytes to stdout; `headers` prints its response headers as a JSON
object with lower-case names; `list` prints one key a line; an error answer
prints its status and body to stderr and exits 1.
"""
import datetime
import hashlib
import hmac
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET

REGION = "us-east-1"
NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"


def _hmac(key, text):
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()


def request(method, key="", query=None, body=b""):
    """One signed request: (status, headers, body bytes)."""
    endpoint = os.environ["CONDUCT_TEST_S3_ENDPOINT"].rstrip("/")
    bucket = os.environ["CONDUCT_TEST_S3_BUCKET"]
    access, secret = os.environ["CONDUCT_TEST_S3_ACCESS_KEY"], os.environ["CONDUCT_TEST_S3_SECRET_KEY"]
    host = urllib.parse.urlsplit(endpoint).netloc
    path = "/" + urllib.parse.quote(bucket, safe="") + ("/" + urllib.parse.quote(key, safe="/") if key else "")
    query = sorted((query or {}).items())
    canonical_query = "&".join(
        "%s=%s" % (urllib.parse.quote(k, safe="-_.~"), urllib.parse.quote(v, safe="-_.~")) for k, v in query
    )
    now = datetime.datetime.now(datetime.timezone.utc)
    amz_date, date = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    payload = hashlib.sha256(body).hexdigest()
    headers = {"host": host, "x-amz-content-sha256": payload, "x-amz-date": amz_date}
    signed = ";".join(sorted(headers))
    canonical = "\n".join(
        [method, path, canonical_query]
        + ["%s:%s" % (k, headers[k]) for k in sorted(headers)]
        + ["", signed, payload]
    )
    scope = "%s/%s/s3/aws4_request" % (date, REGION)
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    k = _hmac(_hmac(_hmac(_hmac(("AWS4" + secret).encode(), date), REGION), "s3"), "aws4_request")
    signature = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s" % (
        access, scope, signed, signature)
    url = endpoint + path + ("?" + canonical_query if canonical_query else "")
    req = urllib.request.Request(url, data=body if method in ("PUT", "POST") else None, method=method,
                                 headers={k: v for k, v in headers.items() if k != "host"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def list_keys(prefix=""):
    """Every key under `prefix`, following continuation tokens."""
    keys, token = [], None
    while True:
        q = {"list-type": "2", "prefix": prefix}
        if token:
            q["continuation-token"] = token
        status, _, body = request("GET", query=q)
        if status != 200:
            raise SystemExit("list: %d %s" % (status, body[:300]))
        root = ET.fromstring(body)
        keys += [c.find(NS + "Key").text for c in root.findall(NS + "Contents")]
        token = root.findtext(NS + "NextContinuationToken")
        if root.findtext(NS + "IsTruncated") != "true" or not token:
            return keys


def main(argv):
    if len(argv) < 2 or argv[1] not in ("put", "get", "headers", "list", "delete"):
        print(__doc__.strip().splitlines()[4].strip(), file=sys.stderr)
        return 2
    verb = argv[1]
    if verb == "list":
        for k in list_keys(argv[2] if len(argv) > 2 else ""):
            print(k)
        return 0
    if verb == "put":
        with open(argv[3], "rb") as f:
            status, _, body = request("PUT", argv[2], body=f.read())
    else:
        method = {"get": "GET", "headers": "GET", "delete": "DELETE"}[verb]
        status, headers, body = request(method, argv[2])
    if status not in (200, 204):
        print("%s %s: %d %s" % (verb, argv[2], status, body[:300].decode("utf-8", "replace")), file=sys.stderr)
        return 1
    if verb == "get":
        sys.stdout.buffer.write(body)
    if verb == "headers":
        print(json.dumps({k.lower(): v for k, v in headers.items()}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

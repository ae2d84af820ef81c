// Pays one x402 request with the stock npm client (@x402/fetch + @x402/evm, viem pinned) and
// prints one JSON line: {status, paymentResponse, body}. Test use only.
// env: URL, PAYER_KEY, TOKEN, NETWORK (default eip155:31337), BODY (JSON), RAIL ("eip3009" | "permit2")
import { wrapFetchWithPayment, x402Client, decodePaymentResponseHeader } from "@x402/fetch";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { privateKeyToAccount } from "viem/accounts";

const network = process.env.NETWORK ?? "eip155:31337";
const rail = process.env.RAIL ?? "eip3009";
const pick = (_version, reqs) =>
  reqs.find((r) => (r.extra?.assetTransferMethod ?? "eip3009") === rail) ?? reqs[0];
const client = new x402Client(pick)
  .register("eip155:*", new ExactEvmScheme(privateKeyToAccount(process.env.PAYER_KEY)))
  .setSpendControls({
    allowedAssets: [{ network, asset: process.env.TOKEN, maxAmountPerPayment: "100000" }],
  });
const fetchWithPay = wrapFetchWithPayment(fetch, client);
const res = await fetchWithPay(process.env.URL, {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: process.env.BODY,
});
const pr = res.headers.get("PAYMENT-RESPONSE");
const out = {
  status: res.status,
  paymentResponse: pr ? decodePaymentResponseHeader(pr) : null,
  body: await res.text(),
};
console.log(JSON.stringify(out));

// Pays one x402 request with the stock npm client (@x402/fetch + @x402/evm, viem pinned) and
// prints one JSON line: {status, paymentResponse, body}. Test use only.
// env: URL, PAYER_KEY, TOKEN, NETWORK (default eip155:31337), BODY (JSON), RAIL ("eip3009" | "permit2"),
//   MAX_AMOUNT: the client's spend cap per payment, in the token's atomic units (a decimal integer;
//   default 100000, $0.10 of a 6-decimal token: the read price). The client declines any payment
//   over it, so a summon at the labor price (library/FAMILIARS.md, $1.00) needs MAX_AMOUNT=1000000.
//   PAYMENT_ID (optional): an x402 payment-identifier id the client puts in its payment's
//   extensions (where the server's 402 declares the extension; library/PAYMENTS.md). The JSON
//   line then also carries paymentSignature, the PAYMENT-SIGNATURE header the client sent.
import { wrapFetchWithPayment, x402Client, decodePaymentResponseHeader } from "@x402/fetch";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { privateKeyToAccount } from "viem/accounts";

const network = process.env.NETWORK ?? "eip155:31337";
const rail = process.env.RAIL ?? "eip3009";
const maxAmount = process.env.MAX_AMOUNT ?? "100000";
if (!/^[1-9][0-9]*$/.test(maxAmount)) {
  console.error(`pay-fetch: MAX_AMOUNT must be a positive decimal integer (atomic units), not ${JSON.stringify(maxAmount)}`);
  process.exit(2);
}
const pick = (_version, reqs) =>
  reqs.find((r) => (r.extra?.assetTransferMethod ?? "eip3009") === rail) ?? reqs[0];
const client = new x402Client(pick)
  .register("eip155:*", new ExactEvmScheme(privateKeyToAccount(process.env.PAYER_KEY)))
  .setSpendControls({
    allowedAssets: [{ network, asset: process.env.TOKEN, maxAmountPerPayment: maxAmount }],
  });
const paymentId = process.env.PAYMENT_ID;
if (paymentId) {
  client.onBeforePaymentCreation(async ({ paymentRequired }) => {
    const ext = paymentRequired.extensions?.["payment-identifier"];
    if (ext) ext.info = { ...ext.info, id: paymentId };
  });
}
let paymentSignature = null;
const recording = async (input, init) => {
  const h = input instanceof Request ? input.headers : new Headers(init?.headers);
  paymentSignature = h.get("PAYMENT-SIGNATURE") ?? paymentSignature;
  return fetch(input, init);
};
const fetchWithPay = wrapFetchWithPayment(recording, client);
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
  ...(paymentId ? { paymentSignature } : {}),
};
console.log(JSON.stringify(out));

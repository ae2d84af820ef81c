//! The `payment_identifier` table: x402 `payment-identifier` ids (library/PAYMENTS.md,
//! "Payment identifiers"). An id of a paid route is bound, by the first call that claims a
//! payment under it, to that payment's payload and request; what the payment bought (or that
//! its settlement is pending) is kept under it, so a retry with the same id and payload is
//! answered from here, also after a restart.

use rusqlite::{params, OptionalExtension, Row};

use super::{PaymentKey, Store, StoreError};
pub use crate::state::tables::{PaymentIdBinding, PaymentIdState, ServedAnswer};

const COLUMNS: &str =
    "payload, request, network, payer, nonce, state, status, receipt, record, location, tx";

fn binding(r: &Row<'_>) -> rusqlite::Result<PaymentIdBinding> {
    Ok(PaymentIdBinding {
        payload: r.get(0)?,
        request: r.get(1)?,
        network: r.get(2)?,
        payer: r.get(3)?,
        nonce: r.get(4)?,
        state: PaymentIdState::parse(&r.get::<_, String>(5)?),
        status: r
            .get::<_, Option<i64>>(6)?
            .and_then(|s| u16::try_from(s).ok()),
        receipt: r.get(7)?,
        record: r.get(8)?,
        location: r.get(9)?,
        tx: r.get(10)?,
    })
}

impl Store {
    /// The binding of identifier `id` of `scope` (a paid route's namespace), if bound.
    pub fn payment_id(
        &self,
        scope: &str,
        id: &str,
    ) -> Result<Option<PaymentIdBinding>, StoreError> {
        Ok(self
            .conn()
            .query_row(
                &format!("SELECT {COLUMNS} FROM payment_identifier WHERE scope = ?1 AND id = ?2"),
                params![scope, id],
                binding,
            )
            .optional()?)
    }

    /// Bind `id` of `scope` to a payment payload (SHA-256 `payload`), a request fingerprint and
    /// the payment `key`, unless it is bound already (the first binding wins); returns the
    /// binding that now holds.
    pub fn bind_payment_id(
        &self,
        scope: &str,
        id: &str,
        payload: &str,
        request: &str,
        key: &PaymentKey<'_>,
        now: u64,
    ) -> Result<PaymentIdBinding, StoreError> {
        let conn = self.conn();
        conn.execute(
            "INSERT INTO payment_identifier (scope, id, payload, request, network, payer, nonce,
                                             state, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'open', ?8, ?8)
             ON CONFLICT DO NOTHING",
            params![
                scope,
                id,
                payload,
                request,
                key.network,
                key.payer,
                key.nonce,
                now as i64
            ],
        )?;
        Ok(conn.query_row(
            &format!("SELECT {COLUMNS} FROM payment_identifier WHERE scope = ?1 AND id = ?2"),
            params![scope, id],
            binding,
        )?)
    }

    /// Mark `id` of `scope` pending on transaction `tx`, keeping `record` (what will be served
    /// once it confirms) when the answer is already made.
    pub fn payment_id_pending(
        &self,
        scope: &str,
        id: &str,
        tx: &str,
        record: Option<&[u8]>,
        now: u64,
    ) -> Result<(), StoreError> {
        self.conn().execute(
            "UPDATE payment_identifier SET state = ?3, tx = ?4, record = COALESCE(?5, record),
                    updated_at = ?6
             WHERE scope = ?1 AND id = ?2 AND state != 'served'",
            params![
                scope,
                id,
                PaymentIdState::Pending.as_str(),
                tx,
                record,
                now as i64
            ],
        )?;
        Ok(())
    }

    /// Keep what was served under `id` of `scope`.
    pub fn payment_id_served(
        &self,
        scope: &str,
        id: &str,
        answer: &ServedAnswer<'_>,
        now: u64,
    ) -> Result<(), StoreError> {
        self.conn().execute(
            "UPDATE payment_identifier SET state = ?3, status = ?4, receipt = ?5, record = ?6,
                    location = ?7, tx = ?8, updated_at = ?9
             WHERE scope = ?1 AND id = ?2",
            params![
                scope,
                id,
                PaymentIdState::Served.as_str(),
                i64::from(answer.status),
                answer.receipt,
                answer.record,
                answer.location,
                answer.tx,
                now as i64
            ],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(nonce: &str) -> PaymentKey<'_> {
        PaymentKey {
            network: "eip155:31337",
            payer: "0xabc",
            nonce,
        }
    }

    #[test]
    fn the_first_binding_holds_and_survives_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(dir.path()).unwrap();
        assert_eq!(
            s.payment_id("profile", "pay_0123456789abcdef").unwrap(),
            None
        );
        let b = s
            .bind_payment_id("profile", "pay_0123456789abcdef", "p1", "r1", &key("1"), 5)
            .unwrap();
        assert_eq!((b.payload.as_str(), b.state), ("p1", PaymentIdState::Open));
        // Another payload under the same id does not take it.
        let again = s
            .bind_payment_id("profile", "pay_0123456789abcdef", "p2", "r1", &key("2"), 6)
            .unwrap();
        assert_eq!((again.payload.as_str(), again.nonce.as_str()), ("p1", "1"));
        // Another route's namespace is another id.
        let other = s
            .bind_payment_id(
                "vow-report",
                "pay_0123456789abcdef",
                "p2",
                "r1",
                &key("2"),
                6,
            )
            .unwrap();
        assert_eq!(other.payload, "p2");
        s.payment_id_pending("profile", "pay_0123456789abcdef", "0xtx", Some(b"rec"), 7)
            .unwrap();
        let p = s
            .payment_id("profile", "pay_0123456789abcdef")
            .unwrap()
            .unwrap();
        assert_eq!(p.state, PaymentIdState::Pending);
        assert_eq!(
            (p.tx.as_deref(), p.record.as_deref()),
            (Some("0xtx"), Some(&b"rec"[..]))
        );
        s.payment_id_served(
            "profile",
            "pay_0123456789abcdef",
            &ServedAnswer {
                status: 200,
                receipt: r#"{"success":true}"#,
                record: b"rec",
                location: None,
                tx: "0xtx",
            },
            8,
        )
        .unwrap();
        drop(s);
        let s = Store::open(dir.path()).unwrap();
        let served = s
            .payment_id("profile", "pay_0123456789abcdef")
            .unwrap()
            .unwrap();
        assert_eq!(served.state, PaymentIdState::Served);
        assert_eq!(served.status, Some(200));
        assert_eq!(served.receipt.as_deref(), Some(r#"{"success":true}"#));
        // A served answer is not made pending again.
        s.payment_id_pending("profile", "pay_0123456789abcdef", "0xother", None, 9)
            .unwrap();
        let still = s
            .payment_id("profile", "pay_0123456789abcdef")
            .unwrap()
            .unwrap();
        assert_eq!(
            (still.state, still.tx.as_deref()),
            (PaymentIdState::Served, Some("0xtx"))
        );
    }

    #[test]
    fn a_claim_keeps_its_payload_and_a_pending_claim_finishes_once() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(dir.path()).unwrap();
        assert!(s
            .claim_payment(&key("1"), "p1", "eip3009", "/profile", "100000", 1)
            .unwrap());
        assert_eq!(s.payment_payload(&key("1")).unwrap().as_deref(), Some("p1"));
        assert_eq!(s.payment_payload(&key("9")).unwrap(), None);
        use super::super::PaymentStatus;
        s.finish_payment(&key("1"), PaymentStatus::Claimed, Some("0xtx"), None, 2)
            .unwrap();
        assert!(s
            .finish_claimed(&key("1"), PaymentStatus::Settled, Some("0xtx"), None, 3)
            .unwrap());
        assert!(!s
            .finish_claimed(&key("1"), PaymentStatus::Settled, Some("0xtx"), None, 4)
            .unwrap());
    }
}

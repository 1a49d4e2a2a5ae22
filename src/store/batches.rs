//! The batches of `--batch` runs: each batch's id and requests, kept the
//! moment the batch is created, and each request's answer as it is read.
//!
//! Takes what the batch provider reports ([`Ledger`]); gives, for a
//! request's custom id, the batch it was sent in, whether that batch was
//! still open, and its answer once read. A run started again after a kill
//! polls the open batch instead of sending the request twice, and takes
//! the answers already read. Keyed by provider and custom id (the id holds
//! a hash of the request body, so the same id is the same request),
//! across runs.

use rusqlite::{OptionalExtension, params};

use super::{Store, now_ms};
use crate::llm::providers::batch::{Ledger, LedgerError, Stored};

impl Ledger for Store {
    fn lookup(&self, provider: &str, custom_id: &str) -> Result<Option<Stored>, LedgerError> {
        let found = self.with(|conn| {
            conn.query_row(
                "SELECT r.batch_id, b.state, r.answer FROM batch_requests r
                 JOIN batches b ON b.provider = r.provider AND b.batch_id = r.batch_id
                 WHERE r.provider = ?1 AND r.custom_id = ?2",
                params![provider, custom_id],
                |row| {
                    Ok(Stored {
                        batch_id: row.get(0)?,
                        open: row.get::<_, String>(1)? == "open",
                        answer: row.get::<_, Option<Vec<u8>>>(2)?,
                    })
                },
            )
            .optional()
        })?;
        Ok(found)
    }

    fn submitted(
        &self,
        provider: &str,
        batch_id: &str,
        round: u32,
        custom_ids: &[String],
    ) -> Result<(), LedgerError> {
        self.with(|conn| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let now = now_ms();
            tx.execute(
                "INSERT OR REPLACE INTO batches (provider, batch_id, round, state, created_at)
                 VALUES (?1, ?2, ?3, 'open', ?4)",
                params![provider, batch_id, round, now],
            )?;
            for id in custom_ids {
                tx.execute(
                    "INSERT OR REPLACE INTO batch_requests (provider, custom_id, batch_id, answer, updated_at)
                     VALUES (?1, ?2, ?3, NULL, ?4)",
                    params![provider, id, batch_id, now],
                )?;
            }
            tx.commit()
        })?;
        Ok(())
    }

    fn answered(&self, provider: &str, custom_id: &str, body: &[u8]) -> Result<(), LedgerError> {
        self.with(|conn| {
            conn.execute(
                "UPDATE batch_requests SET answer = ?3, updated_at = ?4
                 WHERE provider = ?1 AND custom_id = ?2",
                params![provider, custom_id, body, now_ms()],
            )
        })?;
        Ok(())
    }

    fn ended(&self, provider: &str, batch_id: &str, end: &str) -> Result<(), LedgerError> {
        self.with(|conn| {
            conn.execute(
                "UPDATE batches SET state = ?3 WHERE provider = ?1 AND batch_id = ?2",
                params![provider, batch_id, format!("ended: {end}")],
            )
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Placement;

    #[test]
    fn a_request_is_found_in_its_open_batch_then_with_its_answer() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.db"), Placement::Chosen).unwrap();
        assert_eq!(store.lookup("openai", "g1-t1-abc").unwrap(), None);
        store
            .submitted(
                "openai",
                "batch_1",
                1,
                &["g1-t1-abc".into(), "g2-t1-def".into()],
            )
            .unwrap();
        let open = store.lookup("openai", "g1-t1-abc").unwrap().unwrap();
        assert_eq!(
            (open.batch_id.as_str(), open.open, open.answer),
            ("batch_1", true, None)
        );
        assert_eq!(store.lookup("anthropic", "g1-t1-abc").unwrap(), None);
        store.answered("openai", "g1-t1-abc", b"{}").unwrap();
        store.ended("openai", "batch_1", "completed").unwrap();
        let done = store.lookup("openai", "g1-t1-abc").unwrap().unwrap();
        assert_eq!((done.open, done.answer), (false, Some(b"{}".to_vec())));
        let unanswered = store.lookup("openai", "g2-t1-def").unwrap().unwrap();
        assert_eq!((unanswered.open, unanswered.answer), (false, None));
    }
}

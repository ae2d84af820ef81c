//! What the owner-signed jobs' unit tests share (test builds only): a store with sworn vows,
//! a ledger and its sequencer in a temporary directory, and a way to submit a job and wait.

use conduct_core::signing::ServiceKey;

use crate::ledger::{Appended, Job, Ledger, LedgerError, Sequencer};
use crate::store::Store;

/// A temporary store and ledger with some sworn vows, and a runtime to wait on appends.
pub(crate) struct JobBench {
    /// The temporary directory, removed with the bench.
    _dir: tempfile::TempDir,
    /// The store.
    pub store: Store,
    /// The service key the records are signed with (`example.org/log`).
    pub key: ServiceKey,
    seq: Sequencer,
    rt: tokio::runtime::Runtime,
}

impl JobBench {
    /// A bench whose store holds each `(vow id, sandbox, wallet)` as a sworn vow.
    pub fn new(sworn: &[(&str, bool, &str)]) -> JobBench {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let key = ServiceKey::from_seed(&[5; 32], "example.org/log");
        for (id, sandbox, wallet) in sworn {
            let index = 1000 + u64::from_str_radix(id, 16).unwrap();
            crate::store::vows::put_test_vow(&store, id, index, *sandbox, wallet);
        }
        let ledger = Ledger::open(
            &store,
            key.clone(),
            crate::tree::Dir::shared(dir.path()).unwrap(),
        )
        .unwrap();
        let seq = Sequencer::spawn(ledger, 8).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        JobBench {
            _dir: dir,
            store,
            key,
            seq,
            rt,
        }
    }

    /// Submit `job` and wait for its answer.
    pub fn submit(&self, job: Job) -> Result<Appended, LedgerError> {
        self.rt.block_on(self.seq.submit_job(job))
    }
}

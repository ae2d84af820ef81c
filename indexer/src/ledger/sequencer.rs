//! The group-commit sequencer: a thread owns the [`Ledger`] and turns whatever appends are
//! pending into one transaction and one checkpoint, answering each after the commit. It
//! reports the writer's state ([`LogHead`], [`WriterFailure`]) and, while writes fail,
//! recovers by itself.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use conduct_core::tlog::Hash;

use super::{Appended, Job, Ledger, LedgerError, Result};

/// The latest committed state, as seen by a [`Sequencer`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogHead {
    /// Tree size.
    pub size: u64,
    /// Root hash.
    pub root: Hash,
    /// Signed checkpoint note.
    pub checkpoint: String,
    /// Checkpoints (batches) this sequencer has committed.
    pub commits: u64,
    /// `None` while writes commit; else why the last one failed (the sequencer retries by
    /// itself, re-opening a stopped ledger, until a write commits again).
    pub failing: Option<WriterFailure>,
}

/// Why the ledger's writer is not taking writes now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriterFailure {
    /// The last error.
    pub error: String,
    /// The ledger stopped (a commit whose outcome was unknown, or a fork) and is being
    /// re-opened; until then every append is refused.
    pub stopped: bool,
    /// Unix seconds of the first failure of this episode.
    pub since: u64,
    /// The log's files lag the committed log (publishing failed); retried.
    pub files_behind: bool,
}

/// How often a failing writer retries by itself.
const RECOVER_EVERY: Duration = Duration::from_secs(1);
/// Longest the log's files lag commits answered without them (under load).
const MAX_FILE_LAG: Duration = Duration::from_millis(250);

enum Reply {
    Async(tokio::sync::oneshot::Sender<Result<Appended>>),
    Blocking(mpsc::SyncSender<Result<Appended>>),
}

impl Reply {
    fn send(self, r: Result<Appended>) {
        // A requester that went away no longer needs its answer; the entry stays committed.
        match self {
            Reply::Async(s) => {
                let _ = s.send(r);
            }
            Reply::Blocking(s) => {
                let _ = s.send(r);
            }
        }
    }
}

/// Called with a job's result once its batch has committed, before the log's files are
/// published.
pub type OnCommit = Box<dyn FnOnce(&Result<Appended>) + Send>;

struct Request {
    job: Job,
    reply: Reply,
    on_commit: Option<OnCommit>,
}

/// Group commit: a thread owns the [`Ledger`] and appends whatever requests are pending (up
/// to a bound) as one batch, answering each with its index only after the commit.
///
/// Dropping it (or [`Sequencer::shutdown`]) finishes the pending requests and joins the
/// thread, which blocks the caller for at most one commit.
pub struct Sequencer {
    tx: Mutex<Option<mpsc::Sender<Request>>>,
    thread: Mutex<Option<JoinHandle<Ledger>>>,
    head: Arc<Mutex<LogHead>>,
    hooked: Arc<AtomicU64>,
}

impl std::fmt::Debug for Sequencer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sequencer")
            .field("head", &self.head())
            .finish()
    }
}

impl Sequencer {
    /// Start the sequencer thread; each commit takes at most `max_batch` entries (≥ 1).
    pub fn spawn(ledger: Ledger, max_batch: usize) -> Result<Sequencer> {
        let head = Arc::new(Mutex::new(LogHead {
            size: ledger.size(),
            root: ledger.root(),
            checkpoint: ledger.checkpoint().to_owned(),
            commits: 0,
            failing: None,
        }));
        let hooked = Arc::new(AtomicU64::new(ledger.size()));
        let (tx, rx) = mpsc::channel();
        let (shared, hooks_ran) = (head.clone(), hooked.clone());
        let thread = std::thread::Builder::new()
            .name("ledger-sequencer".into())
            .spawn(move || run(ledger, rx, max_batch.max(1), shared, hooks_ran))
            .map_err(|e| LedgerError::Sequencer(format!("spawning the thread: {e}")))?;
        Ok(Sequencer {
            tx: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
            head,
            hooked,
        })
    }

    /// The log size below which every committed record's commit hook has run (read with
    /// `Acquire`): whatever a hook sent for a record below it was sent before. The integration
    /// mark stops there (renderer/src/live/mod.rs, `Marks`), so it never passes a record
    /// whose hook has yet to ask for its pages.
    pub fn hooked(&self) -> Arc<AtomicU64> {
        self.hooked.clone()
    }

    fn submit(&self, job: Job, reply: Reply, on_commit: Option<OnCommit>) -> Result<()> {
        let gone = || LedgerError::Sequencer("stopped".into());
        conduct_core::sync::lock(&self.tx)
            .as_ref()
            .ok_or_else(gone)?
            .send(Request {
                job,
                reply,
                on_commit,
            })
            .map_err(|_| gone())
    }

    /// Append one job; resolves once its batch has committed and the log's files are
    /// published.
    pub async fn submit_job(&self, job: Job) -> Result<Appended> {
        self.submit_job_then(job, None).await
    }

    /// [`Sequencer::submit_job`], calling `on_commit` on the sequencer thread as soon as the
    /// batch has committed (before the log's files are published).
    pub async fn submit_job_then(&self, job: Job, on_commit: Option<OnCommit>) -> Result<Appended> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.submit(job, Reply::Async(tx), on_commit)?;
        rx.await
            .map_err(|_| LedgerError::Sequencer("stopped before answering".into()))?
    }

    /// Blocking [`Sequencer::submit_job`], for threads outside an async runtime.
    pub fn submit_job_blocking(&self, job: Job) -> Result<Appended> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.submit(job, Reply::Blocking(tx), None)?;
        rx.recv()
            .map_err(|_| LedgerError::Sequencer("stopped before answering".into()))?
    }

    /// Append one entry; resolves to its index once its batch has committed.
    pub async fn append(&self, entry: Vec<u8>) -> Result<u64> {
        self.submit_job(Job::Raw(entry)).await.map(|a| a.index)
    }

    /// Blocking [`Sequencer::append`], for threads outside an async runtime.
    pub fn append_blocking(&self, entry: Vec<u8>) -> Result<u64> {
        self.submit_job_blocking(Job::Raw(entry)).map(|a| a.index)
    }

    /// The latest committed size, root and checkpoint.
    pub fn head(&self) -> LogHead {
        conduct_core::sync::lock(&self.head).clone()
    }

    /// Stop accepting requests, finish the pending ones, and hand back the ledger.
    pub fn shutdown(self) -> Result<Ledger> {
        self.join()?
            .ok_or_else(|| LedgerError::Sequencer("already stopped".into()))
    }

    /// Stop accepting requests, finish the pending ones (and the log's files lagging behind
    /// them), and join the thread: once it returns `Ok`, this process writes nothing more to
    /// the log or its files. Later requests fail as `stopped`.
    pub fn stop(&self) -> Result<()> {
        self.join().map(|_| ())
    }

    /// Close the channel and join the thread; `None` when it was joined before.
    fn join(&self) -> Result<Option<Ledger>> {
        drop(conduct_core::sync::lock(&self.tx).take());
        let Some(thread) = conduct_core::sync::lock(&self.thread).take() else {
            return Ok(None);
        };
        thread
            .join()
            .map(Some)
            .map_err(|_| LedgerError::Sequencer("the sequencer thread panicked".into()))
    }
}

impl Drop for Sequencer {
    fn drop(&mut self) {
        let _ = self.join();
    }
}

/// The sequencer loop: block for one request, drain what else is pending, commit, answer.
///
/// Idle, a batch's answers wait for the log's files (tiles, bundles, checkpoint), as a
/// reader of `log/checkpoint` right after an answer expects. Under load (another request
/// already waiting when a batch commits) the answers go out at the commit, which is what
/// makes them durable, and the files are written once for several commits, at most
/// [`MAX_FILE_LAG`] behind: fewer file syncs per entry, and no request waits for files
/// derived from an earlier batch. While writes fail (a full disk), it retries by itself every
/// [`RECOVER_EVERY`] (and before the next batch), re-opening a stopped ledger, so writes
/// resume once they can. When its channel closes it publishes what lags, then returns.
fn run(
    mut ledger: Ledger,
    rx: mpsc::Receiver<Request>,
    max_batch: usize,
    head: Arc<Mutex<LogHead>>,
    hooked: Arc<AtomicU64>,
) -> Ledger {
    let set = |f: &dyn Fn(&mut LogHead)| f(&mut conduct_core::sync::lock(&head));
    let mut failing = false;
    // The log's files could not be written after a commit (retried like a failing write).
    let mut files_failed = false;
    // A request taken while deciding whether to defer the files: the next batch's first.
    let mut carry: Option<Request> = None;
    // Since when the files lag commits answered without them.
    let mut deferred: Option<Instant> = None;
    loop {
        let first = if let Some(r) = carry.take() {
            Some(r)
        } else if failing || files_failed {
            match rx.recv_timeout(RECOVER_EVERY) {
                Ok(r) => Some(r),
                Err(mpsc::RecvTimeoutError::Timeout) => None,
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        } else {
            match rx.recv() {
                Ok(r) => Some(r),
                Err(_) => break,
            }
        };
        if failing || files_failed || ledger.is_poisoned() {
            match ledger.recover() {
                Ok(()) => {
                    if failing {
                        tracing::info!("ledger: writes commit again");
                    }
                    failing = false;
                    files_failed = false;
                    deferred = None;
                    set(&|g| {
                        update_files(g, &ledger);
                        g.failing = None;
                    });
                }
                Err(e) => {
                    failing = true;
                    record_failure(&set, &ledger, &e);
                }
            }
        }
        let Some(first) = first else { continue };
        let mut batch = vec![first];
        while batch.len() < max_batch {
            match rx.try_recv() {
                Ok(r) => batch.push(r),
                Err(_) => break,
            }
        }
        let mut jobs = Vec::with_capacity(batch.len());
        let mut replies = Vec::with_capacity(batch.len());
        let mut hooks = Vec::with_capacity(batch.len());
        for r in batch {
            jobs.push(r.job);
            replies.push(r.reply);
            hooks.push(r.on_commit);
        }
        let on_commit = |results: &[Result<Appended>]| {
            for (hook, r) in hooks.into_iter().zip(results) {
                if let Some(hook) = hook {
                    hook(r);
                }
            }
        };
        let metrics = crate::metrics::metrics();
        metrics.batch_size.observe(jobs.len() as f64);
        let started = Instant::now();
        let committed = ledger.commit_jobs_then(jobs, on_commit);
        let results = match committed {
            Ok(results) => results,
            Err(e) => {
                metrics.commit_duration.observe_duration(started.elapsed());
                failing = true;
                metrics.commit_failures.inc();
                record_failure(&set, &ledger, &e);
                let msg = e.to_string();
                for reply in replies {
                    reply.send(Err(LedgerError::Sequencer(msg.clone())));
                }
                continue;
            }
        };
        // The batch's hooks ran inside the commit.
        hooked.store(ledger.size(), Ordering::Release);
        failing = false;
        carry = rx.try_recv().ok();
        let lag_ok = deferred.is_none_or(|since| since.elapsed() < MAX_FILE_LAG);
        if carry.is_some() && lag_ok {
            deferred.get_or_insert(started);
        } else {
            files_failed = publish(&mut ledger);
            deferred = None;
        }
        metrics.commit_duration.observe_duration(started.elapsed());
        set(&|g| {
            update_head(g, &ledger);
            g.failing = None;
            if files_failed {
                update_files(g, &ledger);
            }
        });
        for (reply, r) in replies.into_iter().zip(results) {
            reply.send(r);
        }
    }
    if ledger.publish_behind() {
        publish(&mut ledger);
    }
    ledger
}

/// Publish the log's files the commits gained; true when that failed (retried).
fn publish(ledger: &mut Ledger) -> bool {
    match ledger.republish() {
        Ok(()) => false,
        Err(e) => {
            tracing::warn!(size = ledger.size(), error = %e, "ledger: publishing the log files after a commit failed; retried");
            true
        }
    }
}

/// Applies an update to the shared [`LogHead`].
type SetHead<'a> = dyn Fn(&dyn Fn(&mut LogHead)) + 'a;

fn record_failure(set: &SetHead<'_>, ledger: &Ledger, e: &LedgerError) {
    let error = e.to_string();
    let stopped = ledger.is_poisoned();
    let behind = ledger.publish_behind();
    set(&|g| {
        let since = g
            .failing
            .as_ref()
            .map_or_else(crate::clock::wall_now, |f| f.since);
        g.failing = Some(WriterFailure {
            error: error.clone(),
            stopped,
            since,
            files_behind: behind,
        });
    });
}

/// Note in the head whether the log's files lag (a publish failure without a write failure).
fn update_files(g: &mut LogHead, ledger: &Ledger) {
    if ledger.publish_behind() && g.failing.is_none() {
        g.failing = Some(WriterFailure {
            error: "the log's files could not be written; retrying".into(),
            stopped: false,
            since: crate::clock::wall_now(),
            files_behind: true,
        });
    }
}

fn update_head(g: &mut LogHead, ledger: &Ledger) {
    g.size = ledger.size();
    g.root = ledger.root();
    g.checkpoint = ledger.checkpoint().to_owned();
    g.commits += 1;
}

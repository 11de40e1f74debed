//! Group commit of verified deliveries: one writer thread records every
//! delivery the webhook handler accepts, many per SQLite transaction.
//!
//! A handler sends its [`Delivery`] and awaits the answer; the writer takes
//! what is waiting (at most [`MAX_BATCH`]) and records it in one
//! transaction with [`Store::accept_batch`], then answers each handler. So
//! no request thread blocks on the database, and under load the cost of a
//! commit is shared by the deliveries that arrived meanwhile. A handler is
//! answered only after the transaction holding its delivery committed: a
//! 2xx still means the delivery id and its work survive a kill. When a
//! transaction fails, every delivery in it is answered with the error (503,
//! nothing recorded) and GitHub redelivers.
//!
//! The writer stops when the last [`Intake`] is dropped, after answering
//! what it had taken.

use std::sync::Arc;
use std::sync::mpsc as std_mpsc;
use std::thread;

use tokio::sync::oneshot;

use crate::store::{Accepted, Delivery, Store, StoreError};

/// The most deliveries recorded in one transaction.
pub const MAX_BATCH: usize = 256;

/// Why a delivery was not recorded: nothing of it was (the handler answers
/// 503 and GitHub redelivers).
#[derive(Debug, Clone, thiserror::Error)]
pub enum IntakeError {
    /// The writer thread is gone (the server is stopping).
    #[error("the intake writer has stopped")]
    Stopped,
    /// The transaction holding the delivery failed (shared by every
    /// delivery in it).
    #[error(transparent)]
    Record(Arc<StoreError>),
}

struct Job {
    delivery: Delivery,
    reply: oneshot::Sender<Result<Accepted, IntakeError>>,
}

/// The handlers' end of the writer.
#[derive(Debug, Clone)]
pub struct Intake {
    jobs: std_mpsc::Sender<Job>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("delivery", &self.delivery.id)
            .finish()
    }
}

impl Intake {
    /// Starts the writer thread over `store`.
    pub fn start(store: Store) -> std::io::Result<Intake> {
        let (jobs, rx) = std_mpsc::channel::<Job>();
        thread::Builder::new()
            .name("benchops-app-intake".into())
            .spawn(move || writer(&store, &rx))?;
        Ok(Intake { jobs })
    }

    /// Records `delivery` (see [`Store::accept`]); resolves once its
    /// transaction committed or failed.
    pub async fn accept(&self, delivery: Delivery) -> Result<Accepted, IntakeError> {
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send(Job { delivery, reply })
            .map_err(|_| IntakeError::Stopped)?;
        answer.await.map_err(|_| IntakeError::Stopped)?
    }
}

fn writer(store: &Store, rx: &std_mpsc::Receiver<Job>) {
    let mut batch: Vec<Job> = Vec::with_capacity(MAX_BATCH);
    let mut deliveries: Vec<Delivery> = Vec::with_capacity(MAX_BATCH);
    while let Ok(first) = rx.recv() {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        deliveries.clear();
        deliveries.extend(batch.iter().map(|j| j.delivery.clone()));
        match store.accept_batch(&deliveries) {
            Ok(answers) => {
                for (job, answer) in batch.drain(..).zip(answers) {
                    // A handler that went away (client gone) needs no answer;
                    // its delivery is recorded all the same.
                    let _ = job.reply.send(Ok(answer));
                }
            }
            Err(e) => {
                let e = IntakeError::Record(Arc::new(e));
                for job in batch.drain(..) {
                    let _ = job.reply.send(Err(e.clone()));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delivery(id: &str, extract: Option<&str>) -> Delivery {
        Delivery {
            id: id.to_owned(),
            event: "push".to_owned(),
            received_at: 1,
            extract: extract.map(str::to_owned),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_deliveries_are_each_recorded_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let intake = Intake::start(store.clone()).expect("start");
        let mut tasks = Vec::new();
        // 500 distinct ids, each sent twice, from 1,000 concurrent tasks.
        for i in 0..1000 {
            let intake = intake.clone();
            tasks.push(tokio::spawn(async move {
                let id = format!("d-{}", i % 500);
                intake.accept(delivery(&id, Some("{}"))).await
            }));
        }
        let mut new = 0;
        let mut dup = 0;
        for t in tasks {
            match t.await.expect("task").expect("recorded") {
                Accepted::New(Some(_)) => new += 1,
                Accepted::Duplicate => dup += 1,
                Accepted::New(None) => panic!("work was given"),
            }
        }
        assert_eq!((new, dup), (500, 500));
        assert_eq!(store.delivery_count().expect("count"), 500);
        assert_eq!(store.inbox(1000).expect("inbox").len(), 500);
    }

    #[tokio::test]
    async fn a_stopped_writer_is_an_error_not_a_hang() {
        let (jobs, rx) = std_mpsc::channel::<Job>();
        drop(rx);
        let intake = Intake { jobs };
        let e = intake
            .accept(delivery("a", None))
            .await
            .expect_err("not recorded");
        assert!(matches!(e, IntakeError::Stopped), "{e:?}");
        assert_eq!(e.to_string(), "the intake writer has stopped");
    }

    #[tokio::test]
    async fn a_failed_transaction_records_nothing_and_answers_every_delivery() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        store
            .write(|tx| tx.execute_batch("DROP TABLE inbox"))
            .expect("break the inbox");
        let intake = Intake::start(store.clone()).expect("start");
        let a = intake.accept(delivery("a", None));
        let b = intake.accept(delivery("b", Some("{}")));
        let (a, b) = tokio::join!(a, b);
        // Whether they shared the failing transaction or not, `b` fails and
        // leaves no trace; `a` is recorded only if it committed on its own.
        assert!(matches!(b, Err(IntakeError::Record(_))), "{b:?}");
        assert!(!store.has_delivery("b").expect("lookup"));
        assert_eq!(a.is_ok(), store.has_delivery("a").expect("lookup"));
    }
}

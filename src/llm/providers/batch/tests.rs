//! The gatherer against a fake batch API: rounds wait for every live
//! agent, a failed line is sent once more alone, answers are matched by
//! custom id.

use std::collections::HashMap;
use std::sync::Mutex as StdMutex;

use serde_json::json;

use super::*;
use crate::llm::conversation::ChatRequest;
use crate::llm::providers::openai::OpenAi;

/// Answers every line with its custom id as text, except the ids whose
/// first submission `fail_first` names.
struct Fake {
    wire: OpenAi,
    submitted: StdMutex<Vec<Vec<String>>>,
    fail_first: Vec<&'static str>,
    /// Every batch stays in progress.
    never_end: bool,
}

impl Fake {
    fn new(fail_first: Vec<&'static str>) -> Self {
        Self {
            wire: OpenAi {
                key_env: "K".into(),
            },
            submitted: StdMutex::new(Vec::new()),
            fail_first,
            never_end: false,
        }
    }
}

impl BatchApi for Fake {
    type Format = OpenAi;

    fn wire(&self) -> &OpenAi {
        &self.wire
    }

    fn submit<'a>(
        &'a self,
        lines: &'a [(String, Value)],
    ) -> BoxFuture<'a, Result<String, ProviderError>> {
        Box::pin(async move {
            let mut submitted = self.submitted.lock().unwrap();
            submitted.push(lines.iter().map(|(id, _)| id.clone()).collect());
            Ok(format!("b{}", submitted.len()))
        })
    }

    fn status<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Status, ProviderError>> {
        Box::pin(async move {
            if id == "gone" {
                return Err(ProviderError::NotFound {
                    provider: "openai".into(),
                    url: "batches/gone".into(),
                });
            }
            if self.never_end {
                return Ok(Status {
                    phase: BatchPhase::InProgress,
                    end: None,
                    done: 0,
                    total: 1,
                    results: Vec::new(),
                });
            }
            Ok(Status {
                phase: BatchPhase::Ended,
                end: Some("completed".into()),
                done: 0,
                total: 0,
                results: vec![id.to_string()],
            })
        })
    }

    fn results<'a>(&'a self, status: &'a Status) -> BoxFuture<'a, Result<Results, ProviderError>> {
        Box::pin(async move {
            let index: usize = status.results[0][1..].parse().unwrap();
            let submitted = self.submitted.lock().unwrap();
            let lines = submitted[index - 1]
                .iter()
                .map(|id| {
                    let fails = index == 1 && self.fail_first.iter().any(|f| id.starts_with(f));
                    Line {
                        custom_id: id.clone(),
                        outcome: if fails {
                            Outcome::Failed("HTTP 500: oops".into())
                        } else {
                            let body = json!({"choices": [{"message": {"role": "assistant", "content": id}, "finish_reason": "stop"}]});
                            Outcome::Answer(serde_json::to_vec(&body).unwrap())
                        },
                    }
                })
                .collect();
            Ok(Results {
                lines,
                unreadable: 0,
            })
        })
    }
}

fn provider(fake: Fake) -> Arc<BatchProvider<Fake>> {
    let poll = Poll {
        first: Duration::from_millis(1),
        max: Duration::from_millis(2),
    };
    Arc::new(BatchProvider::new(fake, "m", poll, None))
}

fn request(text: &str) -> ChatRequest {
    ChatRequest {
        messages: vec![Message::User { text: text.into() }],
        max_output_tokens: 10,
        ..ChatRequest::default()
    }
}

#[tokio::test]
async fn a_round_waits_for_every_live_agent_and_answers_each_its_own() {
    let p = provider(Fake::new(Vec::new()));
    let mut hold = p.rounds().unwrap().hold(3);
    let mut tasks = Vec::new();
    for name in ["g1", "g2", "g3"] {
        let member = hold.member(&format!("{name}-auditor")).unwrap();
        let p = Arc::clone(&p);
        tasks.push(tokio::spawn(member.scope(async move {
            p.chat(&request(name)).await.unwrap().text.unwrap()
        })));
    }
    drop(hold);
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    let submitted = p.inner.api.submitted.lock().unwrap().clone();
    assert_eq!(submitted.len(), 1, "{submitted:?}");
    assert_eq!(submitted[0].len(), 3);
    for (name, answer) in ["g1", "g2", "g3"].iter().zip(&answers) {
        assert!(
            answer.starts_with(&format!("{name}-auditor-t1-")),
            "{answer}"
        );
        assert!(answer.len() <= 64);
    }
    let stats = p.rounds().unwrap().stats();
    assert_eq!(
        (stats.rounds, stats.batches, stats.requests, stats.answered),
        (1, 1, 3, 3)
    );
}

#[tokio::test]
async fn a_failed_line_is_sent_once_more_alone_and_the_others_are_answered() {
    let p = provider(Fake::new(vec!["g2"]));
    let mut hold = p.rounds().unwrap().hold(2);
    let mut tasks = Vec::new();
    for name in ["g1", "g2"] {
        let member = hold.member(name).unwrap();
        let p = Arc::clone(&p);
        tasks.push(tokio::spawn(
            member.scope(async move { p.chat(&request(name)).await }),
        ));
    }
    for t in tasks {
        assert!(t.await.unwrap().is_ok());
    }
    let submitted = p.inner.api.submitted.lock().unwrap().clone();
    assert_eq!(submitted.len(), 2, "{submitted:?}");
    assert_eq!(submitted[1].len(), 1);
    assert!(submitted[1][0].starts_with("g2-"));
    let stats = p.rounds().unwrap().stats();
    assert_eq!((stats.resent, stats.failed, stats.answered), (1, 0, 2));
}

#[tokio::test]
async fn once_no_round_is_driven_each_round_counted_has_shown_its_end() {
    let p = provider(Fake::new(vec!["g2"]));
    let done = Arc::new(StdMutex::new(Vec::new()));
    let seen = Arc::clone(&done);
    p.rounds().unwrap().set_observer(Arc::new(move |event| {
        if let RoundEvent::Done { round, .. } = event {
            seen.lock().unwrap().push(*round);
        }
    }));
    let mut hold = p.rounds().unwrap().hold(2);
    let mut tasks = Vec::new();
    for name in ["g1", "g2"] {
        let member = hold.member(name).unwrap();
        let p = Arc::clone(&p);
        tasks.push(tokio::spawn(
            member.scope(async move { p.chat(&request(name)).await }),
        ));
    }
    for t in tasks {
        assert!(t.await.unwrap().is_ok());
    }
    let mut driving = p.rounds().unwrap().driving();
    driving.wait_for(|n| *n == 0).await.unwrap();
    let stats = p.rounds().unwrap().stats();
    assert_eq!(stats.rounds, 2, "{stats:?}");
    assert_eq!(*done.lock().unwrap(), vec![1, 2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_stops_polling_as_soon_as_its_last_caller_stops_waiting() {
    let mut fake = Fake::new(Vec::new());
    fake.never_end = true;
    // An hour between polls: the round ends only because nobody waits.
    let hour = Duration::from_secs(3600);
    let p = Arc::new(BatchProvider::new(
        fake,
        "m",
        Poll {
            first: hour,
            max: hour,
        },
        None,
    ));
    let mut driving = p.rounds().unwrap().driving();
    let mut hold = p.rounds().unwrap().hold(1);
    let member = hold.member("g1").unwrap();
    let call = {
        let p = Arc::clone(&p);
        tokio::spawn(member.scope(async move { p.chat(&request("x")).await }))
    };
    driving.wait_for(|n| *n == 1).await.unwrap();
    call.abort();
    let ended = tokio::time::timeout(Duration::from_secs(30), driving.wait_for(|n| *n == 0)).await;
    assert!(
        ended.is_ok(),
        "the round still polls a batch nobody waits for"
    );
    let stats = p.rounds().unwrap().stats();
    assert_eq!(stats.open.len(), 1, "{stats:?}");
}

#[tokio::test]
async fn calls_of_no_member_made_together_go_as_one_batch() {
    let p = provider(Fake::new(Vec::new()));
    let (x, y) = (request("x"), request("y"));
    let (a, b) = tokio::join!(p.chat(&x), p.chat(&y));
    assert!(a.unwrap().text.unwrap().starts_with("call-t1-"));
    assert!(b.is_ok());
    let submitted = p.inner.api.submitted.lock().unwrap().clone();
    assert_eq!(submitted.len(), 1, "{submitted:?}");
    assert_eq!(submitted[0].len(), 2);
}

#[test]
fn custom_ids_keep_to_what_anthropic_accepts() {
    let id = custom_id(&sanitize(&"a/b c.rs".repeat(10)), 12, "openai", b"{}");
    assert!(id.len() <= 64, "{id}");
    assert!(
        id.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    );
}

#[test]
fn the_runs_fence_boundary_does_not_change_a_custom_id() {
    let body = |b: &str| {
        serde_json::to_vec(&json!({"system": format!("fenced with boundary=\"{b}\""), "m": format!("<file boundary=\"{b}\">x</file {b}>")})).unwrap()
    };
    let a = custom_id("g", 1, "openai", &body("0123456789abcdef"));
    let b = custom_id("g", 1, "openai", &body("fedcba9876543210"));
    assert_eq!(a, b);
    assert_ne!(a, custom_id("g", 1, "openai", b"{}"));
}

/// A ledger in memory that says every request it does not know was sent
/// in batch "gone" by an earlier process.
#[derive(Default)]
struct Memory(StdMutex<HashMap<String, Stored>>);

impl Ledger for Memory {
    fn lookup(&self, _: &str, id: &str) -> Result<Option<Stored>, LedgerError> {
        let mut known = self.0.lock().unwrap();
        Ok(Some(
            known
                .entry(id.to_string())
                .or_insert(Stored {
                    batch_id: "gone".into(),
                    open: true,
                    answer: None,
                })
                .clone(),
        ))
    }
    fn submitted(&self, _: &str, batch: &str, _: u32, ids: &[String]) -> Result<(), LedgerError> {
        let mut known = self.0.lock().unwrap();
        for id in ids {
            known.insert(
                id.clone(),
                Stored {
                    batch_id: batch.into(),
                    open: true,
                    answer: None,
                },
            );
        }
        Ok(())
    }
    fn answered(&self, _: &str, id: &str, body: &[u8]) -> Result<(), LedgerError> {
        if let Some(s) = self.0.lock().unwrap().get_mut(id) {
            s.answer = Some(body.to_vec());
        }
        Ok(())
    }
    fn ended(&self, _: &str, batch: &str, _: &str) -> Result<(), LedgerError> {
        for s in self
            .0
            .lock()
            .unwrap()
            .values_mut()
            .filter(|s| s.batch_id == batch)
        {
            s.open = false;
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_batch_of_an_earlier_run_that_is_gone_is_sent_again() {
    let p = provider(Fake::new(Vec::new()));
    let memory = Arc::new(Memory::default());
    p.rounds()
        .unwrap()
        .set_ledger(Arc::clone(&memory) as Arc<dyn Ledger>);
    let answer = p.chat(&request("x")).await.unwrap();
    assert!(answer.text.is_some());
    let stats = p.rounds().unwrap().stats();
    assert_eq!(
        (stats.picked_up, stats.resent, stats.batches, stats.failed),
        (1, 1, 1, 0),
        "{stats:?}"
    );
    assert!(
        p.notes()
            .iter()
            .any(|n| n.contains("could not be picked up")),
        "{:?}",
        p.notes()
    );
    // Asked again, the answer comes from the store.
    let again = p.chat(&request("x")).await.unwrap();
    assert_eq!(again.text, answer.text);
    assert_eq!(p.rounds().unwrap().stats().from_store, 1);
}

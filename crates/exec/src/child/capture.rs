//! Bounded output capture: the reader threads that drain a command's stdout
//! and stderr, keeping only the last [`TAIL_BYTES`] of each and feeding
//! stdout to the metric parser when metric lines are on.

use std::io::{self, Read};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;

use super::metrics::MetricParser;

/// How many trailing bytes of stdout and of stderr are kept.
pub const TAIL_BYTES: usize = 4096;

/// What has been read from one pipe.
#[derive(Debug)]
pub(super) struct Capture {
    /// The last bytes of the stream.
    pub(super) tail: Tail,
    /// The metric parser, when metric lines are parsed.
    pub(super) metrics: Option<MetricParser>,
}

impl Capture {
    /// An empty capture; with `json_metrics`, lines are parsed as metrics.
    pub(super) fn new(json_metrics: bool) -> Self {
        Self {
            tail: Tail::default(),
            metrics: json_metrics.then(MetricParser::default),
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        self.tail.push(chunk);
        if let Some(parser) = &mut self.metrics {
            parser.push(chunk);
        }
    }

    /// Ends the last, unterminated line. Idempotent.
    fn finish(&mut self) {
        if let Some(parser) = &mut self.metrics {
            parser.finish();
        }
    }
}

fn lock(capture: &Mutex<Capture>) -> MutexGuard<'_, Capture> {
    capture.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Takes what was captured so far, even if the reader is still blocked on a
/// pipe held open by a process outside the group.
pub(super) fn take_capture(capture: &Mutex<Capture>) -> Capture {
    let mut guard = lock(capture);
    let mut taken = std::mem::replace(&mut *guard, Capture::new(false));
    taken.finish();
    taken
}

/// Reads `pipe` to its end into `capture`, then reports on `done`.
pub(super) fn spawn_reader<R>(pipe: Option<R>, capture: Arc<Mutex<Capture>>, done: mpsc::Sender<()>)
where
    R: Read + Send + 'static,
{
    thread::spawn(move || {
        if let Some(mut pipe) = pipe {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match pipe.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => lock(&capture).push(&buf[..n]),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        }
        lock(&capture).finish();
        let _ = done.send(());
    });
}

/// The last [`TAIL_BYTES`] of a stream, kept in at most twice that memory.
#[derive(Debug, Default)]
pub(super) struct Tail {
    buf: Vec<u8>,
}

impl Tail {
    fn push(&mut self, chunk: &[u8]) {
        if chunk.len() >= TAIL_BYTES {
            self.buf.clear();
            self.buf
                .extend_from_slice(&chunk[chunk.len() - TAIL_BYTES..]);
        } else {
            self.buf.extend_from_slice(chunk);
            if self.buf.len() > 2 * TAIL_BYTES {
                self.buf.drain(..self.buf.len() - TAIL_BYTES);
            }
        }
    }

    /// Lossy UTF-8 of the tail, at most [`TAIL_BYTES`] long. A character cut
    /// by the tail boundary is dropped rather than shown as U+FFFD.
    pub(super) fn into_string(self) -> String {
        let mut bytes = &self.buf[self.buf.len().saturating_sub(TAIL_BYTES)..];
        let mut skipped = 0;
        while skipped < 3 && bytes.first().is_some_and(|b| b & 0xC0 == 0x80) {
            bytes = &bytes[1..];
            skipped += 1;
        }
        let text = String::from_utf8_lossy(bytes);
        if text.len() <= TAIL_BYTES {
            return text.into_owned();
        }
        // Replacement characters can make the text longer than the bytes.
        let mut start = text.len() - TAIL_BYTES;
        while !text.is_char_boundary(start) {
            start += 1;
        }
        text[start..].to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_is_bounded_and_starts_on_a_character() {
        let mut t = Tail::default();
        for _ in 0..3000 {
            t.push("é".as_bytes());
        }
        let s = t.into_string();
        assert!(s.len() <= TAIL_BYTES);
        assert!(s.chars().all(|c| c == 'é'));

        let mut t = Tail::default();
        t.push(&[0xFF; 3 * TAIL_BYTES]);
        let s = t.into_string();
        assert!(s.len() <= TAIL_BYTES && !s.is_empty());
    }
}

//! Streams one container log file to an HTTP response body: the initial part (whole file, tail
//! or since), then, when following, appended data until the Pod or the file goes away.

use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::mpsc;

use crate::sim::logdecode::Decoder;
use crate::sim::logfilter::LogOptions;
use crate::sim::logtail::{ReadAt, tail_start};
use crate::sim::logwake::{FileWatch, LogWake};
use crate::sim::podwatch::PodGuard;

/// Bytes read from the file per step.
const READ_CHUNK: usize = 64 * 1024;
/// How often a follower looks at the file when it cannot watch it.
pub const POLL_INTERVAL: Duration = Duration::from_millis(100);
/// How often a follower that watches its file looks at it anyway (and so at its Pod).
pub const WATCHED_CHECK_INTERVAL: Duration = Duration::from_millis(500);
/// How often a follower checks its Pod.
pub const POD_CHECK_INTERVAL: Duration = Duration::from_millis(500);

/// An opened log file and the identity of what was opened.
pub struct OpenLog {
    path: PathBuf,
    file: Arc<File>,
    dev: u64,
    ino: u64,
    len: u64,
}

/// Opens a log file (blocking work runs off the async threads).
pub async fn open(path: &Path) -> io::Result<OpenLog> {
    let path = path.to_owned();
    blocking(move || {
        let file = File::open(&path)?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file",
            ));
        }
        Ok(OpenLog {
            path,
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            file: Arc::new(file),
        })
    })
    .await
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|err| io::Error::other(format!("file task failed: {err}")))?
}

/// Where output goes; stops at `limitBytes` or when the client is gone.
struct Sink {
    tx: mpsc::Sender<Bytes>,
    remaining: Option<u64>,
}

impl Sink {
    /// Sends what `out` holds (and empties it). False when the stream must stop.
    async fn send(&mut self, out: &mut Vec<u8>) -> bool {
        if out.is_empty() {
            return !self.tx.is_closed();
        }
        let mut done = false;
        if let Some(remaining) = self.remaining.as_mut() {
            let keep = usize::try_from(*remaining)
                .unwrap_or(usize::MAX)
                .min(out.len());
            out.truncate(keep);
            *remaining -= keep as u64;
            done = *remaining == 0;
        }
        let chunk = Bytes::from(std::mem::take(out));
        self.tx.send(chunk).await.is_ok() && !done
    }
}

/// Reads `log` from `pos` to its current end through the decoder. Returns the new position,
/// or None when the stream must stop.
async fn read_to_end(
    log: &OpenLog,
    mut pos: u64,
    decoder: &mut Decoder,
    sink: &mut Sink,
) -> io::Result<Option<u64>> {
    let mut out = Vec::new();
    loop {
        let file = Arc::clone(&log.file);
        let chunk = blocking(move || {
            let mut buf = vec![0u8; READ_CHUNK];
            let n = file.read_at(&mut buf, pos)?;
            buf.truncate(n);
            Ok(buf)
        })
        .await?;
        if chunk.is_empty() {
            return Ok(Some(pos));
        }
        pos += chunk.len() as u64;
        decoder.feed(&chunk, &mut out);
        if !sink.send(&mut out).await {
            return Ok(None);
        }
    }
}

/// Streams `log` per `opts` into `tx`. With `follow`, `pod` (when given) ends the stream once
/// the Pod is deleted or replaced; removing the file ends it too. A follower re-reads when `wake`
/// reports a change of the file, and on a timer.
pub async fn stream(
    mut log: OpenLog,
    opts: LogOptions,
    mut pod: Option<PodGuard>,
    wake: LogWake,
    tx: mpsc::Sender<Bytes>,
) {
    let path = log.path.clone();
    if let Err(err) = stream_inner(&mut log, opts, pod.as_mut(), &wake, tx).await {
        tracing::warn!(path = %path.display(), error = %err, "log stream ended with an error");
    }
}

async fn stream_inner(
    log: &mut OpenLog,
    opts: LogOptions,
    mut pod: Option<&mut PodGuard>,
    wake: &LogWake,
    tx: mpsc::Sender<Bytes>,
) -> io::Result<()> {
    let mut sink = Sink {
        tx,
        remaining: opts.limit_bytes,
    };
    let start = match (opts.tail_lines, opts.since) {
        (None, None) => 0,
        (lines, _) => {
            let file = Arc::clone(&log.file);
            let (len, lines) = (log.len, lines.unwrap_or(u64::MAX));
            let scan_opts = opts.clone();
            blocking(move || tail_start(&*file, len, lines, &scan_opts)).await?
        }
    };
    let follow = opts.follow;
    // Watched before the first read, so no write after it goes unnoticed.
    let mut watched = if follow { wake.watch(&log.path) } else { None };
    let mut decoder = Decoder::new(opts);
    let Some(mut pos) = read_to_end(log, start, &mut decoder, &mut sink).await? else {
        return Ok(());
    };
    if !follow {
        let mut out = Vec::new();
        decoder.finish(&mut out);
        sink.send(&mut out).await;
        return Ok(());
    }

    let period = |watched: &Option<FileWatch>| {
        if watched.is_some() {
            WATCHED_CHECK_INTERVAL
        } else {
            POLL_INTERVAL
        }
    };
    let mut ticker = tokio::time::interval(period(&watched));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_pod_check = Instant::now();
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            () = changed(&mut watched) => {}
            () = sink.tx.closed() => return Ok(()),
        }
        let meta = match tokio::fs::metadata(&log.path).await {
            Ok(meta) => meta,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                tracing::debug!(path = %log.path.display(), "log file removed; ending follow");
                return Ok(());
            }
            Err(err) => return Err(err),
        };
        if meta.dev() != log.dev || meta.ino() != log.ino {
            // Replaced (rotated or recreated): start over on the new file.
            tracing::debug!(path = %log.path.display(), "log file replaced; reading it from the start");
            match open(&log.path).await {
                Ok(new) => {
                    *log = new;
                    let was_watched = watched.is_some();
                    watched = wake.watch(&log.path);
                    if watched.is_some() != was_watched {
                        ticker = tokio::time::interval(period(&watched));
                        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                    }
                }
                Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(err) => return Err(err),
            }
            pos = 0;
            decoder.reset();
        } else if meta.len() < pos {
            tracing::debug!(path = %log.path.display(), "log file truncated; reading it from the start");
            pos = 0;
            decoder.reset();
        }
        if meta.len() > pos || pos == 0 {
            match read_to_end(log, pos, &mut decoder, &mut sink).await? {
                Some(next) => pos = next,
                None => return Ok(()),
            }
        }
        if let Some(guard) = pod.as_deref_mut()
            && last_pod_check.elapsed() >= POD_CHECK_INTERVAL
        {
            last_pod_check = Instant::now();
            if !guard.alive().await {
                // Deliver what was written before the Pod went away, then end cleanly.
                if read_to_end(log, pos, &mut decoder, &mut sink)
                    .await?
                    .is_some()
                {
                    let mut out = Vec::new();
                    decoder.finish(&mut out);
                    sink.send(&mut out).await;
                }
                tracing::debug!(path = %log.path.display(), "pod deleted or replaced; ending follow");
                return Ok(());
            }
        }
    }
}

/// Waits for a change of the watched file; never returns for a follower that polls.
async fn changed(watched: &mut Option<FileWatch>) {
    match watched {
        Some(watch) => watch.changed().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    async fn collect(mut rx: mpsc::Receiver<Bytes>) -> String {
        let mut all = Vec::new();
        while let Some(chunk) = rx.recv().await {
            all.extend_from_slice(&chunk);
        }
        String::from_utf8(all).expect("utf-8")
    }

    fn write_log(dir: &Path, text: &str) -> PathBuf {
        let path = dir.join("c.log");
        std::fs::write(&path, text).expect("write log");
        path
    }

    const LOG: &str = "\
2024-05-01T10:00:00Z stdout F one
2024-05-01T10:00:01Z stdout F two
2024-05-01T10:00:02Z stderr F three
2024-05-01T10:00:03Z stdout F four
";

    async fn recv(rx: &mut mpsc::Receiver<Bytes>) -> Option<Bytes> {
        tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .expect("chunk in time")
    }

    async fn run(path: &Path, opts: LogOptions) -> String {
        let log = open(path).await.expect("open");
        let (tx, rx) = mpsc::channel(4);
        let task = tokio::spawn(stream(log, opts, None, LogWake::none(), tx));
        let out = collect(rx).await;
        task.await.expect("stream task");
        out
    }

    #[tokio::test]
    async fn tail_since_and_limit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write_log(dir.path(), LOG);
        assert_eq!(
            run(&path, LogOptions::default()).await,
            "one\ntwo\nthree\nfour\n"
        );
        let tail = LogOptions {
            tail_lines: Some(2),
            ..LogOptions::default()
        };
        assert_eq!(run(&path, tail).await, "three\nfour\n");
        let since = LogOptions {
            since: Some("2024-05-01T10:00:01Z".parse().expect("ts")),
            tail_lines: Some(5),
            ..LogOptions::default()
        };
        assert_eq!(run(&path, since).await, "two\nthree\nfour\n");
        let limit = LogOptions {
            limit_bytes: Some(6),
            ..LogOptions::default()
        };
        assert_eq!(run(&path, limit).await, "one\ntw");
        let stamped = LogOptions {
            limit_bytes: Some(25),
            timestamps: true,
            ..LogOptions::default()
        };
        assert_eq!(run(&path, stamped).await, "2024-05-01T10:00:00Z one\n");
    }

    #[tokio::test]
    async fn follow_sees_appends_and_truncation_and_ends_on_removal() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write_log(dir.path(), "2024-05-01T10:00:00Z stdout F one\n");
        let log = open(&path).await.expect("open");
        let (tx, mut rx) = mpsc::channel(4);
        let opts = LogOptions {
            follow: true,
            ..LogOptions::default()
        };
        let task = tokio::spawn(stream(log, opts, None, LogWake::none(), tx));
        assert_eq!(recv(&mut rx).await.as_deref(), Some(&b"one\n"[..]));

        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .expect("append");
        file.write_all(b"2024-05-01T10:00:01Z stdout P tw")
            .expect("write");
        file.write_all(b"\n2024-05-01T10:00:01Z stdout F o\n")
            .expect("write");
        drop(file);
        let mut got = Vec::new();
        while got != b"two\n" {
            let chunk = recv(&mut rx).await.expect("stream open");
            got.extend_from_slice(&chunk);
        }

        std::fs::write(&path, "2024-05-01T10:00:02Z stdout F new\n").expect("truncate");
        assert_eq!(recv(&mut rx).await.as_deref(), Some(&b"new\n"[..]));

        std::fs::remove_file(&path).expect("remove");
        assert_eq!(recv(&mut rx).await, None);
        task.await.expect("stream task");
    }
}

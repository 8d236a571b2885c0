//! Why an answer holds no or only some of a Run's records: notes computed
//! from the Run (phase, attempt), what the read met and the live output.

use serde::Serialize;

use super::filter::LogRecord;
use kruntimes_core::run::Run;
use kruntimes_core::runtimed::TRUNCATED_MARKER;

/// One note of a `RunLog` answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct LogNote {
    /// Why the note is there.
    pub reason: NoteReason,
    /// A sentence for people.
    pub message: String,
}

/// What a note is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ts_rs::TS)]
pub enum NoteReason {
    /// The records are the Run's live output from runtimed's status
    /// endpoint: runtimed writes them to its log when the Run ends.
    LiveOutput,
    /// The Run runs, runtimed has written none of its records yet, and its
    /// live output could not be read.
    LiveOutputUnavailable,
    /// The Run runs and has printed nothing (or runtimed writes its records
    /// only when it ends).
    NotYetWritten,
    /// The Run ended as Timeout or Cancelled: runtimed writes no records then.
    NoneWrittenForPhase,
    /// The Run was retried: only the last attempt's records are kept.
    EarlierAttemptsNotKept,
    /// A stream passed the runtime's size bound and was cut.
    OutputTruncated,
    /// Some records come from the `runtimed` container that ran before its
    /// last restart.
    PreviousContainer,
    /// The Run's window reaches before the last `runtimed` restart, but
    /// the previous container's log is gone.
    PreviousLogGone,
    /// runtimed wrote the records when the Run ended: their times are when
    /// they were written, not when they were printed.
    WrittenAtEnd,
}

/// What reading the live output came to, for the notes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LiveOutcome {
    /// Not asked (written records were found, or the Run is not running).
    NotTried,
    /// Records came from it.
    Used,
    /// runtimed knows no execution of the Run (not started, or forgotten).
    NotFound,
    /// It could not be read: why.
    Failed(String),
    /// Reading it is switched off.
    Disabled,
}

/// What a read met, for the notes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Met {
    /// Written records of the Run met (including any left out by a bound).
    pub written: u64,
    /// Records were read from the container before its last restart.
    pub from_previous: bool,
    /// The container before the last restart was asked for and its log is gone.
    pub previous_gone: bool,
}

/// The Run's attempt (1-based; the engine leaves it blank during a first attempt).
pub fn attempt(run: &Run) -> u32 {
    run.status
        .as_ref()
        .and_then(|s| s.attempt)
        .and_then(|a| u32::try_from(a).ok())
        .unwrap_or(1)
        .max(1)
}

/// The notes of an answer with `records`.
pub fn notes(run: &Run, records: &[LogRecord], met: Met, live: &LiveOutcome) -> Vec<LogNote> {
    let mut notes = Vec::new();
    let mut note = |reason, message: String| notes.push(LogNote { reason, message });
    let phase = run.phase();
    match live {
        LiveOutcome::Used => note(
            NoteReason::LiveOutput,
            "runtimed has not written this Run's records yet: these lines are its live output so far, read from runtimed's status endpoint; when they were printed is not known".into(),
        ),
        LiveOutcome::Failed(why) if met.written == 0 => note(
            NoteReason::LiveOutputUnavailable,
            format!("runtimed has not written this Run's records yet and its live output could not be read: {why}"),
        ),
        LiveOutcome::NotFound | LiveOutcome::Disabled | LiveOutcome::NotTried
            if met.written == 0 && !run.is_terminal() =>
        {
            note(
                NoteReason::NotYetWritten,
                format!("the Run is {phase} and runtimed has written none of its records yet (it may write them only when the Run ends)"),
            );
        }
        _ => {}
    }
    if run.is_terminal() && met.written == 0 && matches!(phase, "Timeout" | "Cancelled") {
        note(
            NoteReason::NoneWrittenForPhase,
            format!(
                "the Run ended as {phase}: runtimed writes no records for Timeout and Cancelled Runs, so what it printed was kept only while it ran (as live output)"
            ),
        );
    }
    let attempt = attempt(run);
    if attempt > 1 {
        note(
            NoteReason::EarlierAttemptsNotKept,
            format!(
                "this is attempt {attempt}: runtimed keeps only the last attempt's records; the earlier attempts' output is not kept"
            ),
        );
    }
    if records.iter().any(|r| r.message == TRUNCATED_MARKER) {
        note(
            NoteReason::OutputTruncated,
            "a stream passed the runtime's size bound (1 MiB per stream) and was cut where the line \"[output truncated]\" is".into(),
        );
    }
    if met.from_previous {
        note(
            NoteReason::PreviousContainer,
            "runtimed restarted since the Run began: records before the restart were read from the previous runtimed container's log".into(),
        );
    }
    if met.previous_gone {
        note(
            NoteReason::PreviousLogGone,
            "runtimed restarted since the Run began and the previous container's log is gone (the kubelet keeps only the last one): records from before the restart are missing".into(),
        );
    }
    if records.iter().any(|r| r.written_at_end) {
        note(
            NoteReason::WrittenAtEnd,
            "runtimed wrote these records when the Run ended: their times are when they were written, not when each line was printed (stdout lines come before stderr lines)".into(),
        );
    }
    notes
}

/// The sentence a follow's final line adds when its Run finished.
pub fn finished_note(phase: &str, written: bool, live: bool) -> Option<&'static str> {
    if written || !matches!(phase, "Timeout" | "Cancelled") {
        return None;
    }
    Some(if live {
        "runtimed writes no records for Timeout and Cancelled Runs: the live output above is all that was kept"
    } else {
        "runtimed writes no records for Timeout and Cancelled Runs, and no live output was read"
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kruntimes_core::run::{RunSpec, RunStatus};

    fn run(phase: &str, attempt: Option<i64>) -> Run {
        let mut r = Run::new("r", RunSpec::default());
        r.status = Some(RunStatus {
            phase: Some(phase.into()),
            attempt,
            ..RunStatus::default()
        });
        r
    }

    fn rec(msg: &str, at_end: bool) -> LogRecord {
        LogRecord {
            stream: "stdout".into(),
            message: msg.into(),
            pod: "p".into(),
            invocation_id: None,
            time: None,
            cursor: String::new(),
            line: None,
            truncated: false,
            source: None,
            written_at_end: at_end,
            is_match: false,
        }
    }

    fn reasons(n: &[LogNote]) -> Vec<NoteReason> {
        n.iter().map(|n| n.reason).collect()
    }

    #[test]
    fn a_timed_out_run_with_no_records_says_why() {
        let n = notes(
            &run("Timeout", Some(1)),
            &[],
            Met::default(),
            &LiveOutcome::NotTried,
        );
        assert_eq!(reasons(&n), [NoteReason::NoneWrittenForPhase]);
        assert!(n[0].message.contains("Timeout"));
        let n = notes(
            &run("Cancelled", None),
            &[],
            Met::default(),
            &LiveOutcome::NotTried,
        );
        assert_eq!(reasons(&n), [NoteReason::NoneWrittenForPhase]);
        // A succeeded Run with no records printed nothing: nothing to explain.
        assert!(
            notes(
                &run("Succeeded", None),
                &[],
                Met::default(),
                &LiveOutcome::NotTried
            )
            .is_empty()
        );
    }

    #[test]
    fn a_running_run_says_where_its_lines_come_from() {
        let r = run("Running", None);
        let live = [rec("a", false)];
        assert_eq!(
            reasons(&notes(&r, &live, Met::default(), &LiveOutcome::Used)),
            [NoteReason::LiveOutput]
        );
        assert_eq!(
            reasons(&notes(&r, &[], Met::default(), &LiveOutcome::NotFound)),
            [NoteReason::NotYetWritten]
        );
        assert_eq!(
            reasons(&notes(
                &r,
                &[],
                Met::default(),
                &LiveOutcome::Failed("refused".into())
            )),
            [NoteReason::LiveOutputUnavailable]
        );
        // Written records (the seeds' runtimed): nothing to explain.
        let met = Met {
            written: 3,
            ..Met::default()
        };
        assert!(notes(&r, &live, met, &LiveOutcome::NotTried).is_empty());
    }

    #[test]
    fn retries_truncation_restarts_and_end_times_are_noted() {
        let met = Met {
            written: 2,
            from_previous: true,
            previous_gone: false,
        };
        let recs = [rec("x", true), rec(TRUNCATED_MARKER, true)];
        let n = notes(&run("Failed", Some(3)), &recs, met, &LiveOutcome::NotTried);
        assert_eq!(
            reasons(&n),
            [
                NoteReason::EarlierAttemptsNotKept,
                NoteReason::OutputTruncated,
                NoteReason::PreviousContainer,
                NoteReason::WrittenAtEnd
            ]
        );
        assert!(n[0].message.contains("attempt 3"));
        let gone = Met {
            written: 0,
            from_previous: false,
            previous_gone: true,
        };
        let n = notes(&run("Succeeded", None), &[], gone, &LiveOutcome::NotTried);
        assert_eq!(reasons(&n), [NoteReason::PreviousLogGone]);
    }

    #[test]
    fn a_follow_that_saw_its_run_time_out_says_why_it_ends_so() {
        assert!(
            finished_note("Timeout", false, true)
                .unwrap()
                .contains("live output above")
        );
        assert!(finished_note("Cancelled", false, false).is_some());
        assert_eq!(finished_note("Timeout", true, true), None);
        assert_eq!(finished_note("Succeeded", false, true), None);
    }
}

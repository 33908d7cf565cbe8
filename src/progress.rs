//! What the run tells as it goes, as events: a phase begins, a detail of it, a line to keep, a
//! repetition measured, a path check's finding, a step's count of records. Every room below the
//! command line emits them through the functions here; the command line installs the one
//! [`Listener`] that shows them (`present::live`), so no room below it prints. With no listener
//! installed (a library caller, a unit test) events go nowhere.
//!
//! A facade like the `log` crate's rather than a listener passed down every call: events come
//! from deep in the driver, the images' builds and the placement, and carry nothing back.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use crate::model::pair::Pair;
use crate::model::{Measurement, PathCheck};

/// One thing the run tells.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// A phase begins (the previous one, if any, is over).
    Phase(&'a str),
    /// The current phase is over, and no other begins yet.
    PhaseEnd,
    /// A passing detail of the current phase (a workload's line, a step being run).
    Detail(&'a str),
    /// A line that must stay visible (a warning, what a step made).
    Notice(&'a str),
    /// A repetition of a scenario measured, under its label; with its pair when the scenario
    /// is paired.
    Measured {
        label: &'a str,
        measurement: &'a Measurement,
        pair: Option<&'a Pair>,
    },
    /// What a path check found (`what` names the check).
    Checked { what: &'a str, check: &'a PathCheck },
    /// A step begins: one that moves `total` records, or one with no count of its own.
    StepStart {
        id: u64,
        what: &'a str,
        total: Option<u64>,
    },
    /// A step's records done so far.
    StepCount { id: u64, done: u64 },
    /// What a step with no count says it is doing now.
    StepSays { id: u64, said: &'a str },
    /// A step is over.
    StepEnd { id: u64 },
}

/// Shows the events (the command line's terminal or log view).
pub trait Listener: Send + Sync {
    fn on(&self, event: Event<'_>);
}

static LISTENER: OnceLock<Box<dyn Listener>> = OnceLock::new();

/// Installs the listener of this process; a second one is ignored (the first stays).
pub fn listen(listener: Box<dyn Listener>) {
    let _ = LISTENER.set(listener);
}

/// Tells the listener, if any.
pub(crate) fn emit(event: Event<'_>) {
    if let Some(listener) = LISTENER.get() {
        listener.on(event);
    }
}

/// A phase begins.
pub(crate) fn phase(what: &str) {
    emit(Event::Phase(what));
}

/// The current phase is over.
pub(crate) fn finish() {
    emit(Event::PhaseEnd);
}

/// A passing detail of the current phase.
pub(crate) fn detail(line: &str) {
    emit(Event::Detail(line));
}

/// A line that must stay visible.
pub(crate) fn notice(line: &str) {
    emit(Event::Notice(line));
}

/// A step under way, told as it moves; it ends when dropped.
pub(crate) struct Step {
    id: u64,
    done: AtomicU64,
}

fn start(what: &str, total: Option<u64>) -> Step {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    emit(Event::StepStart { id, what, total });
    Step {
        id,
        done: AtomicU64::new(0),
    }
}

/// A step that moves `total` records (produce, consume).
pub(crate) fn records(what: &str, total: u64) -> Step {
    start(what, Some(total))
}

/// A step with no count of its own (a tool resolving artifacts, an image sent to the engine, a
/// count at the broker).
pub(crate) fn task(what: &str) -> Step {
    start(what, None)
}

impl Step {
    /// `done` records so far.
    pub(crate) fn set(&self, done: u64) {
        self.done.store(done, Ordering::Relaxed);
        emit(Event::StepCount { id: self.id, done });
    }

    /// `n` more records.
    pub(crate) fn add(&self, n: u64) {
        let done = self.done.fetch_add(n, Ordering::Relaxed) + n;
        emit(Event::StepCount { id: self.id, done });
    }

    /// The records done so far, as told.
    #[cfg(test)]
    pub(crate) fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }

    /// What the step is doing now.
    pub(crate) fn say(&self, said: &str) {
        emit(Event::StepSays { id: self.id, said });
    }
}

impl Drop for Step {
    fn drop(&mut self) {
        emit(Event::StepEnd { id: self.id });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Keeps every event it is told, as text.
    struct Recorder(Mutex<Vec<String>>);

    impl Listener for &'static Recorder {
        fn on(&self, event: Event<'_>) {
            self.0.lock().unwrap().push(format!("{event:?}"));
        }
    }

    #[test]
    fn events_reach_the_installed_listener_in_order() {
        static RECORDER: Recorder = Recorder(Mutex::new(Vec::new()));
        listen(Box::new(&RECORDER));
        phase("a phase no other test tells");
        let step = records("produce", 10);
        step.add(4);
        step.add(3);
        step.set(9);
        let id = step.id;
        drop(step);
        let told: Vec<String> = RECORDER.0.lock().unwrap().clone();
        let at = told
            .iter()
            .position(|e| e == "Phase(\"a phase no other test tells\")")
            .unwrap_or_else(|| panic!("{told:?}"));
        let ours: Vec<&String> = told[at..]
            .iter()
            .filter(|e| {
                e.starts_with("Phase(\"a phase")
                    || e.contains(&format!("id: {id},"))
                    || e.contains(&format!("id: {id} }}"))
            })
            .collect();
        assert_eq!(
            ours,
            [
                "Phase(\"a phase no other test tells\")".to_string(),
                format!("StepStart {{ id: {id}, what: \"produce\", total: Some(10) }}"),
                format!("StepCount {{ id: {id}, done: 4 }}"),
                format!("StepCount {{ id: {id}, done: 7 }}"),
                format!("StepCount {{ id: {id}, done: 9 }}"),
                format!("StepEnd {{ id: {id} }}"),
            ]
            .iter()
            .collect::<Vec<_>>()
        );
    }
}

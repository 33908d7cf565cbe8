//! What the run is doing, on stderr: a spinner per phase on a terminal, plain lines otherwise
//! (a CI log gets no progress-bar noise).

use std::io::IsTerminal;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

struct State {
    bar: Option<ProgressBar>,
    phase: String,
    started: Instant,
}

fn state() -> &'static Mutex<State> {
    static STATE: OnceLock<Mutex<State>> = OnceLock::new();
    STATE.get_or_init(|| {
        Mutex::new(State {
            bar: None,
            phase: String::new(),
            started: Instant::now(),
        })
    })
}

/// The state, even if a thread panicked while holding it (progress output must not fail).
fn lock() -> std::sync::MutexGuard<'static, State> {
    state().lock().unwrap_or_else(|e| e.into_inner())
}

/// Clears the spinner, if any, and prints its phase as done with its duration.
fn end_phase(s: &mut State) {
    if let Some(bar) = s.bar.take() {
        bar.finish_and_clear();
        eprintln!(
            "==> {} ({:.1}s)",
            s.phase,
            s.started.elapsed().as_secs_f64()
        );
    }
}

fn interactive() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("CI").is_none()
}

/// Starts a phase; on a terminal the previous one is printed as done with its duration.
pub fn phase(what: &str) {
    let mut s = lock();
    if !interactive() {
        eprintln!("==> {what}");
        return;
    }
    end_phase(&mut s);
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {prefix} {elapsed:>4} {wide_msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_prefix(what.to_string());
    bar.enable_steady_tick(Duration::from_millis(120));
    s.bar = Some(bar);
    s.phase = what.to_string();
    s.started = Instant::now();
}

/// A detail of the current phase (a workload progress line): the spinner's message on a
/// terminal, an indented line otherwise.
pub fn detail(line: &str) {
    let s = lock();
    match &s.bar {
        Some(bar) => bar.set_message(line.trim().to_string()),
        None => eprintln!("    {line}"),
    }
}

/// A line that must stay visible (a warning, a result summary).
pub fn println(line: &str) {
    let s = lock();
    match &s.bar {
        Some(bar) => bar.println(line),
        None => eprintln!("{line}"),
    }
}

/// Ends the current phase, if any.
pub fn finish() {
    end_phase(&mut lock());
}

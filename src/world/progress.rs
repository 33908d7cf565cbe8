//! What the run is doing, on stderr: a spinner per phase on a terminal, plain lines otherwise
//! (a CI log gets no progress-bar noise). A long step that moves records ([`records`]) shows
//! records done out of the total, the current rate and an ETA: as the spinner's bar on a
//! terminal, as a plain line every [`PLAIN_EVERY`] otherwise.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex, OnceLock};
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
pub(crate) fn phase(what: &str) {
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
    // A scenario's phase reads "name: description"; the name leaves the line room for the
    // step's progress (the whole phase is printed when it ends).
    bar.set_prefix(what.split(": ").next().unwrap_or(what).to_string());
    bar.enable_steady_tick(Duration::from_millis(120));
    s.bar = Some(bar);
    s.phase = what.to_string();
    s.started = Instant::now();
}

/// A detail of the current phase (a workload progress line): the spinner's message on a
/// terminal, an indented line otherwise.
pub(crate) fn detail(line: &str) {
    let s = lock();
    match &s.bar {
        Some(bar) => bar.set_message(line.trim().to_string()),
        None => eprintln!("    {line}"),
    }
}

/// A line that must stay visible (a warning, a result summary).
pub(crate) fn println(line: &str) {
    let s = lock();
    match &s.bar {
        Some(bar) => bar.println(line),
        None => eprintln!("{line}"),
    }
}

/// Ends the current phase, if any.
pub(crate) fn finish() {
    end_phase(&mut lock());
}

/// How often a plain (off-terminal) progress line is printed during a long step, at most.
pub(crate) const PLAIN_EVERY: Duration = Duration::from_secs(10);

/// Progress of one step that moves a known number of records (produce, consume).
pub(crate) struct Records {
    state: Arc<Mutex<Count>>,
    _ticker: Ticker,
}

struct Count {
    what: String,
    total: u64,
    done: u64,
    started: Instant,
    /// The last update's time and count, for the current rate.
    last: (Instant, u64),
    rate: Option<f64>,
    /// When the last plain line was printed.
    printed: Instant,
}

impl Count {
    /// "produce [#####.....] 50000/100000 50% 24000 rec/s ETA 2s": short, so that it fits
    /// beside a scenario's name on a terminal line.
    fn line(&self) -> String {
        const WIDTH: usize = 10;
        let total = self.total.max(1);
        let done = self.done.min(total);
        let filled = (done as u128 * WIDTH as u128 / total as u128) as usize;
        let elapsed = self.started.elapsed().as_secs_f64();
        // Until a rate is measured over a window, the average since the start stands in once
        // it rests on a share of the records (the first record alone would promise an ETA of
        // days).
        let rate = self.rate.or_else(|| {
            (elapsed > 0.0 && done > 0 && done * 100 >= total).then(|| done as f64 / elapsed)
        });
        let tail = match rate {
            Some(r) if r > 0.0 => format!(" {r:.0} rec/s ETA {}", eta((total - done) as f64 / r)),
            _ => format!(" {} elapsed", eta(elapsed)),
        };
        format!(
            "{} [{}{}] {done}/{} {}%{tail}",
            self.what,
            "#".repeat(filled),
            ".".repeat(WIDTH - filled),
            self.total,
            done * 100 / total,
        )
    }
}

fn eta(secs: f64) -> String {
    let s = secs.round() as u64;
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, s % 3600 / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// Starts showing the progress of `what` towards `total` records. Off a terminal a plain line
/// comes at least every [`PLAIN_EVERY`] even when no count arrives (a tool that reports only
/// at its end), so a long step is never silent.
pub(crate) fn records(what: &str, total: u64) -> Records {
    let now = Instant::now();
    let state = Arc::new(Mutex::new(Count {
        what: what.to_string(),
        total,
        done: 0,
        started: now,
        last: (now, 0),
        rate: None,
        printed: now,
    }));
    let ticker = Ticker::start(state.clone(), |c| show_count(c, false));
    Records {
        state,
        _ticker: ticker,
    }
}

/// A thread that shows a step's state four times a second (a terminal's spinner, or a plain
/// line when due) until dropped. Dropping it wakes the thread at once: a step's end is not held
/// to the next tick (a quarter of a second a step, several a repetition).
struct Ticker {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Ticker {
    fn start<T: Send + 'static>(state: Arc<Mutex<T>>, show: fn(&mut T)) -> Ticker {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || {
                // Ends when the sender is dropped (Disconnected), not at the next tick.
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(Duration::from_millis(250))
                {
                    show(&mut state.lock().unwrap_or_else(|e| e.into_inner()));
                }
            })
            .ok();
        Ticker {
            stop: Some(stop),
            thread,
        }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Shows the count: always on a terminal (the spinner's message), off one when `PLAIN_EVERY`
/// has passed or `force`.
fn show_count(c: &mut Count, force: bool) {
    if interactive() {
        let s = lock();
        if let Some(bar) = &s.bar {
            bar.set_message(c.line());
        }
        return;
    }
    if force || c.printed.elapsed() >= PLAIN_EVERY {
        c.printed = Instant::now();
        eprintln!("    {}", c.line());
    }
}

impl Records {
    /// `done` records so far.
    pub(crate) fn set(&self, done: u64) {
        self.update(|_| done);
    }

    /// `n` more records.
    pub(crate) fn add(&self, n: u64) {
        self.update(|done| done + n);
    }

    /// Sets the count to `next(count)` under one lock, then shows it.
    fn update(&self, next: impl FnOnce(u64) -> u64) {
        let mut c = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let done = next(c.done);
        let now = Instant::now();
        let (t, n) = c.last;
        let dt = now.duration_since(t).as_secs_f64();
        if dt >= 0.5 && done >= n {
            c.rate = Some((done - n) as f64 / dt);
            c.last = (now, done);
        }
        // Off a terminal the first records through are shown at once: the log tells when the
        // step got going (a stalled connection set-up shows as a late first line).
        let first = c.done == 0 && done > 0;
        c.done = done.min(c.total);
        show_count(&mut c, first);
    }

    /// The current line, as shown.
    #[cfg(test)]
    pub(crate) fn line(&self) -> String {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).line()
    }
}

/// A step with no count of its own (a tool resolving artifacts, an image being sent to the
/// engine, a count at the broker): shown with its elapsed time and what it last said, as the
/// spinner's message on a terminal, as a plain line at least every [`PLAIN_EVERY`] off one, so
/// a long step is never silent. It ends when dropped.
pub(crate) struct Task {
    state: Arc<Mutex<(String, String, Instant, Instant)>>,
    _ticker: Ticker,
}

/// Starts showing `what`, said at once.
pub(crate) fn task(what: &str) -> Task {
    detail(what);
    let now = Instant::now();
    let state = Arc::new(Mutex::new((what.to_string(), String::new(), now, now)));
    let ticker = Ticker::start(state.clone(), show_task);
    Task {
        state,
        _ticker: ticker,
    }
}

fn task_line((what, said, started, _): &(String, String, Instant, Instant)) -> String {
    let s = started.elapsed().as_secs();
    let elapsed = format!("{}m{:02}s", s / 60, s % 60);
    if said.is_empty() {
        format!("{what} ({elapsed})")
    } else {
        format!("{what} ({elapsed}): {said}")
    }
}

fn show_task(t: &mut (String, String, Instant, Instant)) {
    if interactive() {
        let s = lock();
        if let Some(bar) = &s.bar {
            bar.set_message(task_line(t));
        }
        return;
    }
    if t.3.elapsed() >= PLAIN_EVERY {
        t.3 = Instant::now();
        eprintln!("    {}", task_line(t));
    }
}

impl Task {
    /// What the step says it is doing now (shown with the next line).
    pub(crate) fn say(&self, said: &str) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).1 = said.to_string();
    }

    /// The current line, as shown.
    #[cfg(test)]
    pub(crate) fn line(&self) -> String {
        task_line(&self.state.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_ends_when_its_work_does_not_at_the_next_tick() {
        // Twenty steps of no work: held to the tick they would take five seconds.
        let started = Instant::now();
        for i in 0..20 {
            drop(task(&format!("step {i}")));
        }
        assert!(
            started.elapsed() < Duration::from_millis(250),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn a_task_line_has_its_elapsed_time_and_what_it_last_said() {
        let t = task("resolving");
        assert_eq!(t.line(), "resolving (0m00s)");
        t.say("3 files downloaded");
        assert_eq!(t.line(), "resolving (0m00s): 3 files downloaded");
    }

    #[test]
    fn a_records_line_has_the_count_the_share_the_rate_and_an_eta() {
        let r = records("produce", 1000);
        let l = r.line();
        assert!(l.starts_with("produce [..........] 0/1000 0%"), "{l}");
        {
            let mut c = r.state.lock().unwrap();
            c.done = 500;
            c.rate = Some(100.0);
        }
        let l = r.line();
        assert!(
            l.starts_with("produce [#####.....] 500/1000 50% 100 rec/s ETA 5s"),
            "{l}"
        );
        r.add(10_000);
        assert!(r.line().contains("1000/1000 100%"), "{}", r.line());
    }

    #[test]
    fn the_first_records_alone_promise_no_eta() {
        let r = records("consume", 10_000_000);
        r.state.lock().unwrap().started = Instant::now() - Duration::from_secs(1);
        r.set(1);
        let l = r.line();
        assert!(l.starts_with("consume [..........] 1/10000000 0% "), "{l}");
        assert!(l.ends_with(" elapsed") && !l.contains("ETA"), "{l}");
    }

    #[test]
    fn etas_are_readable() {
        assert_eq!(eta(5.2), "5s");
        assert_eq!(eta(125.0), "2m05s");
        assert_eq!(eta(7300.0), "2h01m");
    }
}

//! The run's events shown on stderr (the command line's [`Live`] listener): a spinner per phase
//! on a terminal, plain lines otherwise (a CI log gets no progress-bar noise). A step that moves
//! records shows records done out of the total, the current rate and an ETA: as the spinner's
//! message on a terminal, as a plain line every [`PLAIN_EVERY`] otherwise.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::progress::{Event, Listener};

/// Where the events are shown: a terminal's spinner for the current phase, or plain lines.
struct Screen {
    /// Decided once: a terminal, and not a CI log.
    interactive: bool,
    phase: Mutex<Phase>,
}

/// The current phase, on a terminal.
struct Phase {
    bar: Option<ProgressBar>,
    what: String,
    started: Instant,
}

impl Screen {
    /// The phase, even if a thread panicked while holding it (progress output must not fail).
    fn lock(&self) -> std::sync::MutexGuard<'_, Phase> {
        self.phase.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts a phase; on a terminal the previous one is printed as done with its duration.
    fn phase(&self, what: &str) {
        if !self.interactive {
            eprintln!("==> {what}");
            return;
        }
        let mut p = self.lock();
        end_phase(&mut p);
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} {prefix} {elapsed:>4} {wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        // A scenario's phase reads "name: description"; the name leaves the line room for the
        // step's progress (the whole phase is printed when it ends).
        bar.set_prefix(what.split(": ").next().unwrap_or(what).to_string());
        bar.enable_steady_tick(Duration::from_millis(120));
        *p = Phase {
            bar: Some(bar),
            what: what.to_string(),
            started: Instant::now(),
        };
    }

    /// A detail of the current phase (a workload progress line): the spinner's message on a
    /// terminal, an indented line otherwise.
    fn detail(&self, line: &str) {
        match &self.lock().bar {
            Some(bar) => bar.set_message(line.trim().to_string()),
            None => eprintln!("    {line}"),
        }
    }

    /// A line that must stay visible (a warning, a result summary).
    fn println(&self, line: &str) {
        match &self.lock().bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }

    /// Ends the current phase, if any.
    fn finish(&self) {
        end_phase(&mut self.lock());
    }

    /// Shows a step: always on a terminal (the spinner's message), off one when
    /// `PLAIN_EVERY` has passed or `force`.
    fn show(&self, step: &mut Step, force: bool) {
        if self.interactive {
            if let Some(bar) = &self.lock().bar {
                bar.set_message(step.line());
            }
            return;
        }
        if force || step.printed.elapsed() >= PLAIN_EVERY {
            step.printed = Instant::now();
            eprintln!("    {}", step.line());
        }
    }
}

/// Clears the spinner, if any, and prints its phase as done with its duration.
fn end_phase(p: &mut Phase) {
    if let Some(bar) = p.bar.take() {
        bar.finish_and_clear();
        eprintln!("==> {} ({:.1}s)", p.what, p.started.elapsed().as_secs_f64());
    }
}

/// How often a plain (off-terminal) progress line is printed during a long step, at most.
const PLAIN_EVERY: Duration = Duration::from_secs(10);

/// The command line's listener: shows each event as it comes.
pub struct Live {
    screen: Arc<Screen>,
    /// The steps under way, each shown by its own ticker until it ends.
    steps: Mutex<HashMap<u64, Shown>>,
}

impl Default for Live {
    fn default() -> Self {
        let screen = Screen {
            interactive: std::io::stderr().is_terminal() && std::env::var_os("CI").is_none(),
            phase: Mutex::new(Phase {
                bar: None,
                what: String::new(),
                started: Instant::now(),
            }),
        };
        Live {
            screen: Arc::new(screen),
            steps: Mutex::default(),
        }
    }
}

/// A step under way: its state, and the ticker that shows it.
struct Shown {
    step: Arc<Mutex<Step>>,
    _ticker: Ticker,
}

impl Listener for Live {
    fn on(&self, event: Event<'_>) {
        let screen = &self.screen;
        match event {
            Event::Phase(what) => screen.phase(what),
            Event::PhaseEnd => screen.finish(),
            Event::Detail(line) => screen.detail(line),
            Event::Notice(line) => screen.println(line),
            Event::Measured {
                label,
                measurement,
                pair,
            } => {
                screen.println(&super::report::measured_rows(label, measurement));
                if let Some(pair) = pair {
                    screen.println(&super::report::measured_pair(pair, measurement));
                }
            }
            Event::Checked { what, check } => {
                screen.println(&super::report::path_check_line(what, check))
            }
            Event::StepStart { id, what, total } => {
                // A task is said at once; a count's first line comes with its first records.
                if total.is_none() {
                    screen.detail(what);
                }
                let step = Arc::new(Mutex::new(Step::new(what, total)));
                let (shown, on) = (step.clone(), screen.clone());
                let ticker = Ticker::start(move || on.show(&mut locked(&shown), false));
                self.steps().insert(
                    id,
                    Shown {
                        step,
                        _ticker: ticker,
                    },
                );
            }
            Event::StepCount { id, done } => {
                if let Some(step) = self.step(id) {
                    let mut step = locked(&step);
                    let first = step.count(done);
                    screen.show(&mut step, first);
                }
            }
            Event::StepSays { id, said } => {
                if let Some(step) = self.step(id) {
                    locked(&step).said = said.to_string();
                }
            }
            // Removed under the map's lock, dropped (its ticker joined) after it.
            Event::StepEnd { id } => drop(self.steps().remove(&id)),
        }
    }
}

/// A step's state, even if a thread panicked while holding it.
fn locked(step: &Mutex<Step>) -> std::sync::MutexGuard<'_, Step> {
    step.lock().unwrap_or_else(|e| e.into_inner())
}

impl Live {
    fn steps(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Shown>> {
        self.steps.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn step(&self, id: u64) -> Option<Arc<Mutex<Step>>> {
        self.steps().get(&id).map(|s| s.step.clone())
    }
}

/// One step's state: a count of records towards a total, or (no total) a task with what it
/// last said.
struct Step {
    what: String,
    total: Option<u64>,
    done: u64,
    said: String,
    started: Instant,
    /// The last update's time and count, for the current rate.
    last: (Instant, u64),
    rate: Option<f64>,
    /// When the last plain line was printed.
    printed: Instant,
}

impl Step {
    fn new(what: &str, total: Option<u64>) -> Step {
        let now = Instant::now();
        Step {
            what: what.to_string(),
            total,
            done: 0,
            said: String::new(),
            started: now,
            last: (now, 0),
            rate: None,
            printed: now,
        }
    }

    /// Sets the count to `done`; true for the first records through, which a log shows at
    /// once (it tells when the step got going: a stalled connection set-up shows as a late
    /// first line).
    fn count(&mut self, done: u64) -> bool {
        let now = Instant::now();
        let (t, n) = self.last;
        let dt = now.duration_since(t).as_secs_f64();
        if dt >= 0.5 && done >= n {
            self.rate = Some((done - n) as f64 / dt);
            self.last = (now, done);
        }
        let first = self.done == 0 && done > 0;
        self.done = done.min(self.total.unwrap_or(u64::MAX));
        first
    }

    fn line(&self) -> String {
        match self.total {
            Some(total) => self.count_line(total),
            None => self.task_line(),
        }
    }

    /// "produce [#####.....] 50000/100000 50% 24000 rec/s ETA 2s": short, so that it fits
    /// beside a scenario's name on a terminal line.
    fn count_line(&self, total: u64) -> String {
        const WIDTH: usize = 10;
        let all = total.max(1);
        let done = self.done.min(all);
        let filled = (done as u128 * WIDTH as u128 / all as u128) as usize;
        let elapsed = self.started.elapsed().as_secs_f64();
        // Until a rate is measured over a window, the average since the start stands in once
        // it rests on a share of the records (the first record alone would promise an ETA of
        // days).
        let rate = self.rate.or_else(|| {
            (elapsed > 0.0 && done > 0 && done * 100 >= all).then(|| done as f64 / elapsed)
        });
        let tail = match rate {
            Some(r) if r > 0.0 => format!(" {r:.0} rec/s ETA {}", eta((all - done) as f64 / r)),
            _ => format!(" {} elapsed", eta(elapsed)),
        };
        format!(
            "{} [{}{}] {done}/{total} {}%{tail}",
            self.what,
            "#".repeat(filled),
            ".".repeat(WIDTH - filled),
            done * 100 / all,
        )
    }

    /// "resolving (0m12s): 3 files downloaded".
    fn task_line(&self) -> String {
        let s = self.started.elapsed().as_secs();
        let elapsed = format!("{}m{:02}s", s / 60, s % 60);
        if self.said.is_empty() {
            format!("{} ({elapsed})", self.what)
        } else {
            format!("{} ({elapsed}): {}", self.what, self.said)
        }
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

/// A thread that shows a step's state four times a second (a terminal's spinner, or a plain
/// line when due) until dropped. Dropping it wakes the thread at once: a step's end is not held
/// to the next tick (a quarter of a second a step, several a repetition).
struct Ticker {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Ticker {
    fn start(mut show: impl FnMut() + Send + 'static) -> Ticker {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || {
                // Ends when the sender is dropped (Disconnected), not at the next tick.
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(Duration::from_millis(250))
                {
                    show();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_ends_when_its_work_does_not_at_the_next_tick() {
        // Twenty steps of no work: held to the tick they would take five seconds.
        let live = Live::default();
        let started = Instant::now();
        for id in 0..20 {
            let what = format!("step {id}");
            live.on(Event::StepStart {
                id,
                what: &what,
                total: None,
            });
            live.on(Event::StepEnd { id });
        }
        assert!(
            started.elapsed() < Duration::from_millis(250),
            "{:?}",
            started.elapsed()
        );
        assert!(live.steps().is_empty());
    }

    #[test]
    fn a_task_line_has_its_elapsed_time_and_what_it_last_said() {
        let live = Live::default();
        live.on(Event::StepStart {
            id: 7,
            what: "resolving",
            total: None,
        });
        let line = || live.step(7).unwrap().lock().unwrap().line();
        assert_eq!(line(), "resolving (0m00s)");
        live.on(Event::StepSays {
            id: 7,
            said: "3 files downloaded",
        });
        assert_eq!(line(), "resolving (0m00s): 3 files downloaded");
    }

    #[test]
    fn a_records_line_has_the_count_the_share_the_rate_and_an_eta() {
        let mut r = Step::new("produce", Some(1000));
        let l = r.line();
        assert!(l.starts_with("produce [..........] 0/1000 0%"), "{l}");
        r.done = 500;
        r.rate = Some(100.0);
        let l = r.line();
        assert!(
            l.starts_with("produce [#####.....] 500/1000 50% 100 rec/s ETA 5s"),
            "{l}"
        );
        r.count(10_500);
        assert!(r.line().contains("1000/1000 100%"), "{}", r.line());
    }

    #[test]
    fn the_first_records_alone_promise_no_eta() {
        let mut r = Step::new("consume", Some(10_000_000));
        r.started = Instant::now() - Duration::from_secs(1);
        r.count(1);
        let l = r.line();
        assert!(l.starts_with("consume [..........] 1/10000000 0% "), "{l}");
        assert!(l.ends_with(" elapsed") && !l.contains("ETA"), "{l}");
    }

    #[test]
    fn a_count_from_the_emitting_side_reaches_its_step() {
        let live = Live::default();
        live.on(Event::StepStart {
            id: 3,
            what: "produce",
            total: Some(100),
        });
        live.on(Event::StepCount { id: 3, done: 40 });
        let line = live.step(3).unwrap().lock().unwrap().line();
        assert!(
            line.starts_with("produce [####......] 40/100 40%"),
            "{line}"
        );
        // A count for a step that has ended (or never began) is dropped, not a panic.
        live.on(Event::StepEnd { id: 3 });
        live.on(Event::StepCount { id: 3, done: 50 });
        assert!(live.step(3).is_none());
    }

    #[test]
    fn etas_are_readable() {
        assert_eq!(eta(5.2), "5s");
        assert_eq!(eta(125.0), "2m05s");
        assert_eq!(eta(7300.0), "2h01m");
    }
}

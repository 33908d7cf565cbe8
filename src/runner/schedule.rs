//! The order a run measures in, and what it keeps between the steps: rounds of every cell (a
//! combination of the matrix) and in each cell every scenario; a sweep's stop rule; the
//! repetitions of each scenario's cell gathered over the rounds until all of them are in.

use std::collections::BTreeMap;

use crate::settings::rate::Rate;

/// One step of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// Round `0..repeat` begins.
    Round(usize),
    /// Scenario `scenario` of cell `cell` is measured.
    Measure { cell: usize, scenario: usize },
}

/// Every step of `repeat` rounds over `cells` cells of `scenarios` scenarios each. A sweep
/// climbs its rates (its cells) in order, so that a rate not sustained stops the higher ones;
/// anything else rotates the cells and, in each, the scenarios from one round to the next, so
/// that a drift of the machine is spread over all of them.
pub(super) fn steps(repeat: usize, cells: usize, scenarios: usize, sweep: bool) -> Vec<Step> {
    let mut steps = Vec::new();
    for round in 0..repeat {
        steps.push(Step::Round(round));
        let order = if sweep {
            (0..cells).collect()
        } else {
            round_order(cells, round)
        };
        for cell in order {
            steps.extend(
                round_order(scenarios, round)
                    .into_iter()
                    .map(|scenario| Step::Measure { cell, scenario }),
            );
        }
    }
    steps
}

/// The indices of round `round` (0-based): `0..n` rotated left by `round`.
fn round_order(n: usize, round: usize) -> Vec<usize> {
    (0..n).map(|i| (i + round) % n.max(1)).collect()
}

/// A sweep's stop rule: the lowest rate each line (a scenario under the other settings) did
/// not sustain; its higher rates are then not measured.
#[derive(Debug, Default)]
pub(super) struct Ceilings(BTreeMap<(usize, String), Rate>);

impl Ceilings {
    /// Whether `rate` is above what `line` was found not to sustain.
    pub(super) fn skips(&self, line: &(usize, String), rate: Rate) -> bool {
        self.0.get(line).is_some_and(|&max| rate > max)
    }

    /// `line` did not sustain `rate`.
    pub(super) fn not_sustained(&mut self, line: (usize, String), rate: Rate) {
        let max = self.0.entry(line).or_insert(rate);
        *max = (*max).min(rate);
    }
}

/// The repetitions of each scenario's cell, gathered over the rounds. Results are kept scenario
/// by scenario, each scenario's cells in order: the key of scenario `s` in cell `c` is
/// `s * cells + c`.
#[derive(Debug)]
pub(super) struct Gathered<R> {
    cells: usize,
    reps: Vec<Vec<R>>,
}

impl<R> Gathered<R> {
    pub(super) fn new(scenarios: usize, cells: usize) -> Self {
        Gathered {
            cells,
            reps: (0..scenarios * cells).map(|_| Vec::new()).collect(),
        }
    }

    /// Whether nothing of scenario `scenario` in cell `cell` was measured yet.
    pub(super) fn first(&self, scenario: usize, cell: usize) -> bool {
        self.reps[scenario * self.cells + cell].is_empty()
    }

    /// Adds what one step measured; once `all` repetitions are in, returns them with their key.
    pub(super) fn add(
        &mut self,
        scenario: usize,
        cell: usize,
        measured: Vec<R>,
        all: usize,
    ) -> Option<(usize, Vec<R>)> {
        let k = scenario * self.cells + cell;
        self.reps[k].extend(measured);
        (self.reps[k].len() == all).then(|| (k, std::mem::take(&mut self.reps[k])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_rotate_the_scenario_order() {
        assert_eq!(round_order(3, 0), [0, 1, 2]);
        assert_eq!(round_order(3, 1), [1, 2, 0]);
        assert_eq!(round_order(3, 2), [2, 0, 1]);
        assert_eq!(round_order(3, 3), [0, 1, 2]);
        assert_eq!(round_order(1, 5), [0]);
        assert!(round_order(0, 2).is_empty());
    }

    fn measured(steps: &[Step]) -> Vec<(usize, usize)> {
        steps
            .iter()
            .filter_map(|s| match *s {
                Step::Measure { cell, scenario } => Some((cell, scenario)),
                Step::Round(_) => None,
            })
            .collect()
    }

    #[test]
    fn each_round_measures_every_scenario_of_every_cell_once_rotated() {
        let s = steps(2, 2, 2, false);
        assert_eq!(s[0], Step::Round(0));
        assert_eq!(s[5], Step::Round(1));
        assert_eq!(measured(&s[1..5]), [(0, 0), (0, 1), (1, 0), (1, 1)]);
        assert_eq!(measured(&s[6..]), [(1, 1), (1, 0), (0, 1), (0, 0)]);
    }

    #[test]
    fn a_sweep_climbs_its_rates_in_order_every_round() {
        let s = steps(2, 3, 1, true);
        assert_eq!(measured(&s[1..4]), [(0, 0), (1, 0), (2, 0)]);
        assert_eq!(measured(&s[5..]), [(0, 0), (1, 0), (2, 0)]);
    }

    #[test]
    fn a_rate_not_sustained_stops_the_higher_ones_of_its_line_only() {
        let r = |n| Rate::per_second(n).unwrap();
        let mut c = Ceilings::default();
        let line = (0, "a".to_string());
        assert!(!c.skips(&line, r(20_000)));
        c.not_sustained(line.clone(), r(20_000));
        c.not_sustained(line.clone(), r(30_000));
        assert!(!c.skips(&line, r(20_000)));
        assert!(c.skips(&line, r(25_000)));
        assert!(c.skips(&line, Rate::Unlimited));
        assert!(!c.skips(&(1, "a".to_string()), r(25_000)));
        assert!(!c.skips(&(0, "b".to_string()), r(25_000)));
    }

    #[test]
    fn a_cells_repetitions_come_out_once_all_are_in() {
        let mut g = Gathered::new(2, 3);
        assert!(g.first(1, 2));
        assert_eq!(g.add(1, 2, vec!["r1"], 2), None);
        assert!(!g.first(1, 2));
        assert!(g.first(0, 2));
        assert_eq!(g.add(1, 2, vec!["r2"], 2), Some((5, vec!["r1", "r2"])));
        assert!(g.first(1, 2));
    }
}

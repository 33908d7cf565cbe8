//! The plan: everything a run will do, resolved before anything starts: which scenarios run in
//! which order, their steps with every variable substituted, the Compose project with the run's
//! variables, the services each part of the run needs, and every image with how it is had.
//! `--dry-run` prints it (`render`, with the run-time `estimate`); the runner realises it
//! without reading settings or files again.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

mod builds;
pub(crate) use builds::of_settings as build_of_settings;
mod estimate;
mod render;
pub mod sides;

use crate::scenario::{self, Scenario, Step, Suite};
use crate::settings::matrix::{self, Axis, Combination};
use crate::settings::sides::Sides;
use crate::settings::Settings;
use crate::world::compose::{self, Project};
use crate::world::images::recipe::{self, ImageRecipe};
use sides::GeneratedFile;

/// Topic names are this prefix plus the scenario name.
pub(crate) const TOPIC_PREFIX: &str = "perf-tests-";

/// A whole run: the matrix's axes, and one planned cell per combination of their values (one
/// cell without a matrix). Every cell shares the run id, the suite and the selected scenarios.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunPlan {
    /// The settings that vary, with their values (empty without a matrix).
    pub axes: Vec<Axis>,
    /// One per combination, the first axis varying slowest.
    pub cells: Vec<Cell>,
    /// A rate sweep (`perf-tests sweep`): THROUGHPUT is the last axis, the combinations are
    /// measured in order, and a scenario's rate stops rising at the first it does not sustain.
    pub sweep: bool,
}

/// One combination of a run's matrix, planned.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cell {
    /// The combination's values (empty without a matrix).
    pub combination: Combination,
    /// The run's settings at this combination (no axes left).
    pub settings: Settings,
    /// Everything the run does at this combination.
    pub plan: Plan,
}

/// Plans a run: the suite's matrix merged with the settings given as lists
/// ([`matrix::merge`]), then a [`plan`] of every combination. An error names the combination.
pub(crate) fn plan_run(settings: &Settings, run_id: &str) -> Result<RunPlan> {
    plan_run_with(settings, run_id, None)
}

/// [`plan_run`] of a paired run (`perf-tests ab`) when `sides` are given: every selected
/// scenario's services make side A, and side B is derived from them ([`sides`]).
pub(crate) fn plan_run_with(
    settings: &Settings,
    run_id: &str,
    sides: Option<&Sides>,
) -> Result<RunPlan> {
    // The files are read once; only what the settings substitute differs between combinations.
    let sources = Sources::read(settings, sides.is_some())?;
    let axes = matrix::merge(&sources.suite.matrix, &settings.matrix);
    let cells = matrix::combinations(&axes)?
        .into_iter()
        .map(|combination| {
            let settings = matrix::apply(settings, &combination)?;
            let planned = plan_from(&sources, &settings, run_id, sides);
            let plan = if combination.is_empty() {
                planned?
            } else {
                planned.with_context(|| format!("at {}", matrix::label(&combination)))?
            };
            Ok(Cell {
                combination,
                settings,
                plan,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RunPlan {
        axes,
        cells,
        sweep: false,
    })
}

impl RunPlan {
    /// The first combination's plan: what every cell shares (run id, suite, scenarios, TLS).
    pub(crate) fn first(&self) -> &Plan {
        &self.cells[0].plan
    }

    /// The run's settings as its results record them: the first combination's values and the
    /// axes.
    pub(crate) fn settings(&self) -> Settings {
        Settings {
            matrix: self.axes.clone(),
            ..self.cells[0].settings.clone()
        }
    }

    /// Measurements the run makes: scenarios x combinations x REPEAT.
    pub(crate) fn measurements(&self) -> usize {
        let cell = &self.cells[0];
        cell.plan.scenarios.len() * self.cells.len() * cell.settings.repeat.max(1) as usize
    }
}

/// Whether two cells run different run-wide services (an image of a run-wide service varies),
/// so that moving from one to the other restarts them.
pub(crate) fn run_wide_differs(a: &Plan, b: &Plan) -> bool {
    a.run_wide
        .iter()
        .chain(&b.run_wide)
        .any(|s| a.project.services.get(s) != b.project.services.get(s))
}

/// Everything a run will do, resolved before anything is started.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The run's id: the label of everything it creates on the engine.
    pub run_id: String,
    /// The suite the scenarios come from.
    pub suite: Suite,
    /// Selected scenarios, in run order.
    pub scenarios: Vec<PlannedScenario>,
    /// Where the run's TLS material is generated (removed when the run ends).
    pub tls_dir: PathBuf,
    /// Host names the run's server certificate is for (none: no TLS material).
    pub tls_hosts: Vec<String>,
    /// The Compose files of the suite and every selected scenario, interpolated with
    /// [`Plan::variables`].
    pub project: Project,
    /// The interpolation variables: every setting under its environment name, `TLS_DIR`, and
    /// `BROKER_VOTERS` (the running brokers' quorum entries of the suite's `brokers:`).
    pub variables: BTreeMap<String, String>,
    /// Services started once for the run (none when every selected scenario has its own broker).
    pub run_wide: Vec<String>,
    /// Every service the run starts (run-wide and every scenario's, with their dependencies),
    /// in start order.
    pub services: Vec<String>,
    /// Every image a service of the run uses, and the network ceiling's when it is measured,
    /// and how each is had.
    pub images: Vec<PlannedImage>,
    /// The suite's image recipes (also for images the driver runs besides the services').
    pub recipes: Vec<ImageRecipe>,
    /// CPUs the load generator's containers may run on (`WORKLOAD_CPUSET`); all when unset.
    pub workload_cpuset: Option<String>,
    /// A paired run's sides (`perf-tests ab`); `None` for any other run.
    pub sides: Option<Sides>,
    /// The proxy images a service of the run uses (`KROXYLICIOUS_IMAGE`, the run's and each
    /// side's), with what chose each: held to a proxy image's contract before anything starts.
    pub proxy_images: Vec<(String, String)>,
    /// Files the run writes before its first container starts (a side's merged
    /// configuration), removed with the run's scratch space.
    pub files: Vec<GeneratedFile>,
}

impl Plan {
    /// How `image` is had: built from the suite's recipe when it has one, else taken from the
    /// engine or pulled.
    pub(crate) fn source_of(&self, image: &str) -> ImageSource {
        source_of(&self.recipes, &self.variables, image)
    }
}

/// One selected scenario with its variables substituted.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedScenario {
    /// The scenario, its setup and teardown steps with every variable substituted.
    pub scenario: Scenario,
    /// Topic the workload produces to and consumes from.
    pub topic: String,
    /// The scenario's own services with their dependencies (what it starts and stops, and what
    /// it uses of the run-wide ones).
    pub closure: Vec<String>,
    /// Where the path check reads records straight from: the suite's broker (`bootstrap`).
    pub direct: String,
    /// In a paired run, the scenario's two sides (its `setup` and `teardown` are then side
    /// A's, for every phase's topic).
    pub pair: Option<PlannedPair>,
}

/// A scenario's two sides in a paired run, as derived from it ([`sides`]).
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedPair {
    /// Which services are each side's, and side B's network.
    pub pair: crate::model::pair::Pair,
    /// Each measured phase of a bring-up (`PAIR_PHASES`): side A's topic and side B's.
    pub topics: Vec<(String, String)>,
    /// Side B's setup and teardown steps: side A's in side B's services, for side B's topics.
    pub setup: Vec<Step>,
    pub teardown: Vec<Step>,
    /// Side B's services came out as side A's: an A/A comparison.
    pub alike: bool,
}

impl PlannedScenario {
    /// Measured phases of each bring-up: `PAIR_PHASES` for a paired scenario, else one.
    pub(crate) fn phases(&self, _settings: &Settings) -> usize {
        self.pair.as_ref().map_or(1, |p| p.topics.len())
    }

    /// The services a bring-up starts and stops: the scenario's, and side B's in a paired run.
    pub(crate) fn started(&self) -> Vec<String> {
        let mut all = self.scenario.services.clone();
        if let Some(p) = &self.pair {
            all.extend(p.pair.b.iter().cloned());
        }
        all
    }
}

/// An image the run needs.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedImage {
    pub image: String,
    pub source: ImageSource,
}

/// How an image is had.
#[derive(Debug, Clone, PartialEq)]
pub enum ImageSource {
    /// Built here from the suite's recipe (skipped when up to date).
    Recipe(ImageRecipe),
    /// Taken from the engine, else pulled; the text names the setting that chooses it.
    Pull { chosen_by: String },
}

/// What a run's plan is made from, as the files say: the suite, its image recipes and the
/// scenarios `TEST` selects (steps not yet substituted).
struct Sources {
    suite: Suite,
    recipes: Vec<ImageRecipe>,
    scenarios: Vec<Scenario>,
}

impl Sources {
    /// Discovers the suite and loads the scenarios `TEST` selects; for a paired run given no
    /// `TEST`, every scenario with services of its own (a path to pair).
    fn read(settings: &Settings, paired: bool) -> Result<Sources> {
        let suite = Suite::load(&settings.scenarios)?;
        let found = scenario::discover(&suite.dir)?;
        // A paired run's TEST is empty unless given: every scenario with a path.
        let every = paired && settings.test.is_empty();
        let test = match every {
            true => crate::settings::table::find("TEST").map_or("", |s| s.default),
            false => &settings.test,
        };
        let mut scenarios = scenario::select(&found, test)?
            .iter()
            .map(|dir| Scenario::load(&suite, dir))
            .collect::<Result<Vec<_>>>()?;
        if every {
            scenarios.retain(|s| !s.services.is_empty() && !s.reference);
            if scenarios.is_empty() {
                bail!(
                    "suite {} (SCENARIOS) has no scenario with services of its own: there is no                      path to pair",
                    suite.dir.display()
                );
            }
        }
        let recipes = recipe::parse_recipes(&suite.images_file, &suite.images)?;
        Ok(Sources {
            suite,
            recipes,
            scenarios,
        })
    }
}

/// Discovers the suite, selects scenarios by `TEST` and resolves everything run `run_id` needs.
pub fn plan(settings: &Settings, run_id: &str) -> Result<Plan> {
    plan_from(&Sources::read(settings, false)?, settings, run_id, None)
}

/// [`plan`] from sources already read, with a paired run's `sides`.
fn plan_from(
    sources: &Sources,
    settings: &Settings,
    run_id: &str,
    sides: Option<&Sides>,
) -> Result<Plan> {
    // Every check across settings, then the suite's own bound on them.
    settings.validate()?;
    let suite = &sources.suite.with_brokers(settings.brokers)?;
    suite.check_record_size(settings.record_size)?;
    let built = with_builds(settings, sides)?;
    let given_sides = sides;
    let sides = built.sides.as_ref();
    let mut scenarios = resolve_scenarios(sources, settings, &built.variables)?;
    let tls_dir = std::env::temp_dir()
        .join(format!("perf-tests-{run_id}"))
        .join("tls");
    let tls_hosts = tls_hosts(&scenarios);
    let mut variables = built.variables;
    variables.insert("TLS_DIR".into(), tls_dir.display().to_string());
    variables.insert("BROKER_VOTERS".into(), suite.broker_voters());
    let files = compose_files(suite, &scenarios);
    let mut project = compose::load(&files, &variables)?;
    pin_services(&mut project, &settings.services_cpuset);
    let (run_wide, mut services) = closures(suite, &project, &mut scenarios)?;
    check_profiled(settings, &scenarios, &run_wide)?;
    check_paired(settings, sides)?;
    let mut generated = Vec::new();
    if let Some(sides) = sides {
        let composed = Composed {
            files: &files,
            variables: &variables,
            run_dir: tls_dir.parent().unwrap_or(&tls_dir),
        };
        let (services_b, files_b) = pair_scenarios(
            sides,
            sources,
            settings,
            &composed,
            &mut project,
            &mut scenarios,
            &run_wide,
        )?;
        services.extend(services_b);
        generated = files_b;
    }
    let mut recipes = sources.recipes.clone();
    recipes.extend(built.builds);
    let images = run_images(
        settings,
        sides,
        &mut recipes,
        &project,
        &services,
        &variables,
    );
    let proxy_images = proxy_images(sides, &variables, &project, &services, &recipes);
    Ok(Plan {
        run_id: run_id.to_string(),
        suite: suite.clone(),
        scenarios,
        tls_dir,
        tls_hosts,
        project,
        variables,
        run_wide,
        services,
        images,
        recipes,
        workload_cpuset: Some(settings.workload_cpuset.clone()).filter(|c| !c.is_empty()),
        sides: given_sides.cloned(),
        proxy_images,
        files: generated,
    })
}

/// The selected scenarios with their steps resolved against `variables`, refused by the run's
/// driver when it cannot run one faithfully.
fn resolve_scenarios(
    sources: &Sources,
    settings: &Settings,
    variables: &BTreeMap<String, String>,
) -> Result<Vec<PlannedScenario>> {
    let suite = &sources.suite;
    let scenarios = sources
        .scenarios
        .iter()
        .map(|s| resolve_scenario(suite, s.clone(), variables))
        .collect::<Result<Vec<_>>>()?;
    let selected: Vec<&Scenario> = scenarios.iter().map(|p| &p.scenario).collect();
    crate::driver::for_settings(settings)?.check(settings, suite, &selected)?;
    Ok(scenarios)
}

/// The run's variables and sides with a proxy given as a build (the run's, or a side's) made
/// into an image whose tag the Compose files see, and the recipes of those builds.
struct WithBuilds {
    variables: BTreeMap<String, String>,
    builds: Vec<ImageRecipe>,
    sides: Option<Sides>,
}

fn with_builds(settings: &Settings, sides: Option<&Sides>) -> Result<WithBuilds> {
    let mut variables = settings.variables();
    let mut builds = Vec::new();
    if let Some((var, value, recipe)) = builds::resolve(&variables)? {
        variables.insert(var, value);
        builds.push(recipe);
    }
    let sides = match sides {
        None => None,
        Some(given) => Some(builds::resolve_sides(given, settings, &mut builds)?),
    };
    Ok(WithBuilds {
        variables,
        builds,
        sides,
    })
}

/// The hosts the selected scenarios' TLS certificates are made for, each once.
fn tls_hosts(scenarios: &[PlannedScenario]) -> Vec<String> {
    scenarios
        .iter()
        .filter_map(|p| p.scenario.tls.as_ref())
        .flat_map(|t| t.hosts.iter().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// SERVICES_CPUSET (`cpuset`, unless empty) pins every service a Compose file leaves unpinned.
fn pin_services(project: &mut Project, cpuset: &str) {
    if cpuset.is_empty() {
        return;
    }
    for service in project.services.values_mut() {
        service.cpuset.get_or_insert_with(|| cpuset.to_string());
    }
}

/// The run-wide services (the suite's, when some scenario uses the run-wide broker), each
/// scenario's closure of services in `project` set, and every service the run starts.
fn closures(
    suite: &Suite,
    project: &Project,
    scenarios: &mut [PlannedScenario],
) -> Result<(Vec<String>, Vec<String>)> {
    let run_wide: Vec<String> = if scenarios.iter().any(|p| !p.scenario.own_broker) {
        suite.services.clone()
    } else {
        Vec::new()
    };
    let mut all = run_wide.clone();
    for p in scenarios.iter_mut() {
        p.closure = project.service_closure(&p.scenario.services)?;
        all.extend(p.scenario.services.iter().cloned());
    }
    let services = project.service_closure(&all)?;
    Ok((run_wide, services))
}

/// Every image the run's `services` use and how each is had, an image a side's variable chose
/// named by it, and the network ceiling's iperf3 image (the runner's, whatever the suite, like
/// the workload's) added to `recipes` when the ceiling is measured.
fn run_images(
    settings: &Settings,
    sides: Option<&Sides>,
    recipes: &mut Vec<ImageRecipe>,
    project: &Project,
    services: &[String],
    variables: &BTreeMap<String, String>,
) -> Vec<PlannedImage> {
    let mut images = images_of(recipes, project, services, variables);
    for (side, overrides) in sides.iter().flat_map(|s| [("A", &s.a), ("B", &s.b)]) {
        for (var, value) in &overrides.variables {
            for i in images.iter_mut().filter(|i| i.image == *value) {
                if let ImageSource::Pull { chosen_by } = &mut i.source {
                    *chosen_by = format!("chosen by side {side}'s {var}");
                }
            }
        }
    }
    if settings.network_ceiling
        && !recipes
            .iter()
            .any(|r| r.image == crate::world::ceiling::IMAGE)
    {
        let r = crate::world::ceiling::recipe();
        images.push(PlannedImage {
            image: r.image.clone(),
            source: ImageSource::Recipe(r.clone()),
        });
        recipes.push(r);
    }
    images
}

/// The Compose files of a run and what they are read with: the run's variables, and the run's
/// directory where a side's merged configurations are written.
struct Composed<'a> {
    files: &'a [PathBuf],
    variables: &'a BTreeMap<String, String>,
    run_dir: &'a Path,
}

/// Pairs every scenario with its side B, derived from the scenario itself (`sides::derive`):
/// B's services added to `project` and to each scenario's closure, each phase's topics, and
/// each side's setup and teardown on its own topics and services. Returns B's services and the
/// files written for them.
fn pair_scenarios(
    sides: &Sides,
    sources: &Sources,
    settings: &Settings,
    composed: &Composed<'_>,
    project: &mut Project,
    scenarios: &mut [PlannedScenario],
    run_wide: &[String],
) -> Result<(Vec<String>, Vec<GeneratedFile>)> {
    let variables = composed.variables;
    let load = |more: &[(String, String)]| {
        let mut vars = variables.clone();
        vars.extend(more.iter().cloned());
        compose::load(composed.files, &vars)
    };
    let derived = {
        let views: Vec<sides::Scenario> = scenarios
            .iter()
            .map(|p| sides::Scenario {
                name: &p.scenario.name,
                file: &p.scenario.file,
                bootstrap: &p.scenario.bootstrap,
                closure: &p.closure,
            })
            .collect();
        sides::derive(sides, project, &load, run_wide, &views, composed.run_dir)?
    };
    let phases = settings.pair_phases.max(1) as usize;
    for ((p, raw), (pair, alike)) in scenarios
        .iter_mut()
        .zip(&sources.scenarios)
        .zip(derived.pairs)
    {
        let topics = sides::phase_topics(&p.topic, phases);
        let (a, b): (Vec<String>, Vec<String>) = topics.iter().cloned().unzip();
        let file = &raw.file;
        let steps = |key: &str, given: &[Step], on: &[String]| {
            steps_for_topics(file, key, given, variables, on)
        };
        p.scenario.setup = steps("setup", &raw.setup, &a)?;
        p.scenario.teardown = steps("teardown", &raw.teardown, &a)?;
        let on_b = |steps: Vec<Step>| -> Vec<Step> {
            steps
                .into_iter()
                .map(|Step::Exec { service, command }| Step::Exec {
                    service: if pair.a.contains(&service) {
                        sides::b_name(&service)
                    } else {
                        service
                    },
                    command,
                })
                .collect()
        };
        let setup = on_b(steps("setup", &raw.setup, &b)?);
        let teardown = on_b(steps("teardown", &raw.teardown, &b)?);
        p.closure.extend(
            derived
                .services_b
                .iter()
                .filter(|s| pair.b.contains(s))
                .cloned(),
        );
        p.pair = Some(PlannedPair {
            pair,
            topics,
            setup,
            teardown,
            alike,
        });
    }
    Ok((derived.services_b, derived.files))
}

/// The proxy images the run uses that a setting chose (the run's, or a side's), each with what
/// chose it and, for a build, what it was made from.
fn proxy_images(
    sides: Option<&Sides>,
    variables: &BTreeMap<String, String>,
    project: &Project,
    services: &[String],
    recipes: &[ImageRecipe],
) -> Vec<(String, String)> {
    let proxy = crate::world::images::build::SETTING;
    let mut proxy_images: Vec<(String, String)> = Vec::new();
    let chosen = std::iter::once((format!("chosen by {proxy}"), variables.get(proxy).cloned()))
        .chain(
            sides
                .iter()
                .flat_map(|s| [("A", &s.a), ("B", &s.b)])
                .map(|(side, o)| {
                    let value = o
                        .variables
                        .iter()
                        .find(|(k, _)| k == proxy)
                        .map(|(_, v)| v.clone());
                    (format!("chosen by side {side}'s {proxy}"), value)
                }),
        );
    for (by, image) in chosen {
        let Some(image) = image else { continue };
        let used = services.iter().any(|s| {
            project
                .services
                .get(s)
                .is_some_and(|svc| svc.image == image)
        });
        if used && !proxy_images.iter().any(|(i, _)| *i == image) {
            // A build is named by what it was made from.
            let by = match recipes.iter().find(|r| r.image == image).map(|r| &r.recipe) {
                Some(crate::world::images::recipe::Recipe::Build(b)) => {
                    format!("{by}, made from the {}", b.describe())
                }
                _ => by,
            };
            proxy_images.push((image, by));
        }
    }
    proxy_images
}

/// Refuses `PROFILE_SERVICES` without `PROFILE`, naming the load generator (no service of a
/// scenario, and with the native driver no JVM), or naming a service some selected scenario
/// does not run.
fn check_profiled(
    settings: &Settings,
    scenarios: &[PlannedScenario],
    run_wide: &[String],
) -> Result<()> {
    if settings.profile_services.is_empty() {
        return Ok(());
    }
    let names = settings.profile_services.join(",");
    if settings.profile.is_none() {
        anyhow::bail!("PROFILE_SERVICES={names:?} is set but PROFILE is off: set PROFILE too");
    }
    for service in &settings.profile_services {
        if service == "workload" {
            anyhow::bail!(
                "PROFILE_SERVICES={names:?}: the load generator (DRIVER={}) is not a service of                  the scenarios and cannot be profiled; name the JVM services to profile",
                settings.driver
            );
        }
        for p in scenarios {
            if !p.closure.contains(service) && !run_wide.contains(service) {
                anyhow::bail!(
                    "PROFILE_SERVICES={names:?}: scenario {} runs no service {service:?} (its                      services: {})",
                    p.scenario.name,
                    p.closure.iter().chain(run_wide).cloned().collect::<Vec<_>>().join(", ")
                );
            }
        }
    }
    Ok(())
}

/// Settings only a paired run (`perf-tests ab`) uses: given other than their default to any
/// other run, they are refused rather than ignored.
const PAIRED_ONLY: [&str; 2] = ["PAIR_PHASES", "PAIR_THRESHOLD"];

/// Refuses a paired run whose settings cannot run its two sides in one phase at one rate:
/// both sides' producers and consumers at once (`MODE=end-to-end`), at a `THROUGHPUT` (CPU per
/// MB compares only at one rate), bounded by records (a `DURATION` run is costed with its
/// warm-up), each side's clients the native workload's sessions; and the paired settings given
/// to any other run.
fn check_paired(settings: &Settings, sides: Option<&Sides>) -> Result<()> {
    if sides.is_none() {
        for var in PAIRED_ONLY {
            let setting = crate::settings::table::find(var).expect("a declared setting");
            let value = setting.value(settings);
            if value != setting.default {
                anyhow::bail!(
                    "{var}={value}: only a paired run (`perf-tests ab`) has a use for it"
                );
            }
        }
        return Ok(());
    }
    let why = if settings.mode != crate::settings::Mode::EndToEnd {
        format!(
            "MODE={}: both sides run at once, in MODE=end-to-end",
            settings.mode
        )
    } else if !settings.throughput.is_limited() {
        format!(
            "THROUGHPUT={}: the sides' CPU per MB compares only at one rate; set THROUGHPUT \
             to a rate both sides sustain",
            settings.throughput
        )
    } else if let Some(d) = settings.duration.map(|d| d.as_secs()) {
        format!("DURATION={d}: a run bounded by time is costed with its warm-up; set NUM_RECORDS")
    } else if settings.driver != "native" {
        format!(
            "DRIVER={}: each side's clients are a session of the native workload on the side's \
             own network",
            settings.driver
        )
    } else {
        return Ok(());
    };
    anyhow::bail!("a paired run cannot pair its sides at {why}")
}

/// `steps` resolved for each of `topics` (`${TOPIC}`), in order: a step that names the topic
/// once per topic, any other once (a key per topic, the engine it lives in enabled once).
fn steps_for_topics(
    file: &Path,
    key: &str,
    steps: &[Step],
    vars: &BTreeMap<String, String>,
    topics: &[String],
) -> Result<Vec<Step>> {
    let mut out = Vec::new();
    for step in steps {
        let mut own: Vec<Step> = Vec::new();
        for topic in topics {
            let mut vars = vars.clone();
            vars.insert("TOPIC".to_string(), topic.clone());
            let resolved = resolve_steps(file, key, std::slice::from_ref(step), &vars)?;
            for s in resolved {
                if !own.contains(&s) {
                    own.push(s);
                }
            }
        }
        out.extend(own);
    }
    Ok(out)
}

/// A selected scenario with its topic and its steps' variables substituted.
fn resolve_scenario(
    suite: &Suite,
    mut scenario: Scenario,
    base_vars: &BTreeMap<String, String>,
) -> Result<PlannedScenario> {
    let topic = format!("{TOPIC_PREFIX}{}", scenario.name);
    let mut vars = base_vars.clone();
    vars.insert("TOPIC".to_string(), topic.clone());
    scenario.setup = resolve_steps(&scenario.file, "setup", &scenario.setup, &vars)?;
    scenario.teardown = resolve_steps(&scenario.file, "teardown", &scenario.teardown, &vars)?;
    if scenario.expect.is_some() && scenario.own_broker {
        anyhow::bail!(
            "{}: expect: the path check reads from the suite's broker ({}), which a scenario \
             with own_broker does not use",
            scenario.file.display(),
            suite.bootstrap
        );
    }
    Ok(PlannedScenario {
        scenario,
        topic,
        closure: Vec::new(),
        direct: suite.bootstrap.clone(),
        pair: None,
    })
}

/// Every image `services` run, and how each is had.
fn images_of(
    recipes: &[ImageRecipe],
    project: &Project,
    services: &[String],
    variables: &BTreeMap<String, String>,
) -> Vec<PlannedImage> {
    let used: BTreeSet<&String> = services
        .iter()
        .filter_map(|s| project.services.get(s).map(|s| &s.image))
        .collect();
    used.into_iter()
        .map(|image| PlannedImage {
            image: image.clone(),
            source: source_of(recipes, variables, image),
        })
        .collect()
}

fn source_of(
    recipes: &[ImageRecipe],
    variables: &BTreeMap<String, String>,
    image: &str,
) -> ImageSource {
    match recipes.iter().find(|r| r.image == image) {
        Some(r) => ImageSource::Recipe(r.clone()),
        None => ImageSource::Pull {
            chosen_by: chosen_by(variables, image),
        },
    }
}

/// The suite's Compose files, then each selected scenario's that are not already among them.
fn compose_files(suite: &Suite, scenarios: &[PlannedScenario]) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = suite.compose.clone();
    for p in scenarios {
        for f in &p.scenario.compose {
            if !files.contains(f) {
                files.push(f.clone());
            }
        }
    }
    files
}

/// Names the setting whose value is `image`, so the user knows what to change.
fn chosen_by(variables: &BTreeMap<String, String>, image: &str) -> String {
    variables
        .iter()
        .find(|(k, v)| *v == image && k.ends_with("_IMAGE"))
        .map(|(k, _)| format!("chosen by {k}"))
        .unwrap_or_else(|| "named in the Compose file".into())
}

fn resolve_steps(
    file: &Path,
    key: &str,
    steps: &[Step],
    vars: &BTreeMap<String, String>,
) -> Result<Vec<Step>> {
    steps
        .iter()
        .enumerate()
        .map(|(i, step)| match step {
            Step::Exec { service, command } => Ok(Step::Exec {
                service: service.clone(),
                command: command
                    .iter()
                    .map(|arg| {
                        substitute(arg, vars).map_err(|e| {
                            anyhow::anyhow!("{}: {key} step {}: {e}", file.display(), i + 1)
                        })
                    })
                    .collect::<Result<_>>()?,
            }),
        })
        .collect()
}

/// Replaces every `${NAME}` in `text` with its value; `$$` is a literal `$`.
pub(crate) fn substitute(text: &str, vars: &BTreeMap<String, String>) -> Result<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(tail) = after.strip_prefix('{') {
            let Some(end) = tail.find('}') else {
                bail!("unterminated ${{ in {text:?}");
            };
            let name = &tail[..end];
            match vars.get(name) {
                Some(value) => out.push_str(value),
                None => bail!(
                    "unknown variable ${{{name}}} in {text:?} (known: {})",
                    vars.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            }
            rest = &tail[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn vars() -> BTreeMap<String, String> {
        [("TOPIC", "perf-tests-01-a"), ("NUM_RECORDS", "10")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn substitution_replaces_known_variables() {
        let v = vars();
        assert_eq!(
            substitute("transit/keys/${TOPIC}", &v).unwrap(),
            "transit/keys/perf-tests-01-a"
        );
        assert_eq!(
            substitute("${NUM_RECORDS}x${TOPIC}", &v).unwrap(),
            "10xperf-tests-01-a"
        );
        assert_eq!(substitute("$$HOME $x plain", &v).unwrap(), "$HOME $x plain");
        let err = substitute("${NOPE}", &v).unwrap_err().to_string();
        assert!(err.contains("${NOPE}") && err.contains("TOPIC"), "{err}");
        assert!(substitute("${TOPIC", &v).is_err());
    }

    #[test]
    fn plan_selects_and_resolves() {
        let root = tempfile::tempdir().unwrap();
        let suite = root.path().join("suite");
        fs::create_dir_all(suite.join("01-a")).unwrap();
        fs::create_dir_all(suite.join("02-b")).unwrap();
        fs::write(
            root.path().join("c.yaml"),
            "services:\n  broker: { image: b }\n  vault: { image: v }\n",
        )
        .unwrap();
        fs::write(
            suite.join("suite.yaml"),
            "description: s\ncompose: [../c.yaml]\nservices: [broker]\nbootstrap: broker:9092\n",
        )
        .unwrap();
        fs::write(
            suite.join("01-a/scenario.yaml"),
            "description: a\nbootstrap: broker:9092\nsetup:\n  - exec: { service: vault, command: [key, \"${TOPIC}\", \"${RECORD_SIZE}\"] }\n",
        )
        .unwrap();
        fs::write(
            suite.join("02-b/scenario.yaml"),
            "description: b\nbootstrap: broker:9092\nteardown:\n  - exec: { service: vault, command: [\"${OOPS}\"] }\n",
        )
        .unwrap();
        let settings = Settings {
            scenarios: suite.clone(),
            test: "01.*".into(),
            commit_id: "c".into(),
            ..Settings::default()
        };
        let p = plan(&settings, "run").unwrap();
        assert_eq!(p.scenarios.len(), 1);
        assert_eq!(p.scenarios[0].topic, "perf-tests-01-a");
        assert_eq!(
            p.scenarios[0].scenario.setup,
            [Step::Exec {
                service: "vault".into(),
                command: vec!["key".into(), "perf-tests-01-a".into(), "1024".into()]
            }]
        );
        // The plan holds the resolved steps only: no reference is left to resolve later.
        assert!(!format!("{:?}", p.scenarios[0].scenario).contains("${"));
        assert_eq!(
            p.tls_dir,
            std::env::temp_dir().join("perf-tests-run").join("tls")
        );
        assert_eq!(p.variables["TLS_DIR"], p.tls_dir.display().to_string());
        assert_eq!(p.run_wide, ["broker"]);
        // The services' images, and the network ceiling's (NETWORK_CEILING=1 by default).
        assert_eq!(
            p.images,
            [
                PlannedImage {
                    image: "b".into(),
                    source: ImageSource::Pull {
                        chosen_by: "named in the Compose file".into()
                    }
                },
                PlannedImage {
                    image: crate::world::ceiling::IMAGE.into(),
                    source: ImageSource::Recipe(crate::world::ceiling::recipe()),
                }
            ]
        );
        let without = plan(
            &Settings {
                network_ceiling: false,
                ..settings.clone()
            },
            "run",
        )
        .unwrap();
        assert!(without.images.iter().all(|i| i.image == "b"));
        let text = p.render(&settings);
        assert!(
            text.contains("Selected scenarios (TEST=01.*): 01-a"),
            "{text}"
        );
        assert!(text.contains("topic: perf-tests-01-a"), "{text}");

        let err = plan(
            &Settings {
                test: ".*".into(),
                ..settings
            },
            "run",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("02-b/scenario.yaml") && err.contains("teardown step 1"),
            "{err}"
        );
        assert!(err.contains("${OOPS}"), "{err}");
    }
}

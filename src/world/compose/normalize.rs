//! From the written form (`file`) to the typed project (`Service`, `Network`).

use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::file::{
    MapOrList, PortSpec, RawDependsOn, RawNetwork, RawService, RawServiceNetworks,
    ServiceConfigRef, StringOrList, VolumeSpec,
};
use super::interpolate::Variables;
use super::{resolve, BindMount, Condition, Healthcheck, Network, PortMapping, Service};

/// Rewrites bind-mount sources to absolute paths against the file's directory, so that files
/// from different directories can be merged.
pub(super) fn absolutize_volumes(
    f: &str,
    svc: &str,
    raw: &mut RawService,
    dir: &Path,
) -> Result<()> {
    let Some(volumes) = raw.volumes.as_mut() else {
        return Ok(());
    };
    for v in volumes.iter_mut() {
        match v {
            VolumeSpec::Short(s) => {
                let parts: Vec<&str> = s.split(':').collect();
                if parts.len() < 2 || parts.len() > 3 {
                    bail!("{f}: service \"{svc}\": volume \"{s}\": expected \"source:target[:ro|rw]\" (anonymous volumes are not supported)");
                }
                let src = parts[0];
                if !(src.starts_with('.') || src.starts_with('/')) {
                    bail!("{f}: service \"{svc}\": volume \"{s}\": named volumes are not supported, use a host path (./dir or /dir)");
                }
                if parts.len() == 3 && !matches!(parts[2], "ro" | "rw") {
                    bail!("{f}: service \"{svc}\": volume \"{s}\": mode must be ro or rw");
                }
                let abs = resolve(dir, src);
                let mut new = format!("{}:{}", abs.display(), parts[1]);
                if parts.len() == 3 {
                    new.push(':');
                    new.push_str(parts[2]);
                }
                *s = new;
            }
            VolumeSpec::Long(l) => {
                if l.kind != "bind" {
                    bail!(
                        "{f}: service \"{svc}\": volume type \"{}\" is not supported (only bind)",
                        l.kind
                    );
                }
                l.source = resolve(dir, &l.source).display().to_string();
            }
        }
    }
    Ok(())
}

pub(super) fn network(f: &str, name: &str, raw: RawNetwork) -> Result<Network> {
    if let Some(d) = raw.driver.as_deref() {
        if d != "bridge" {
            bail!("{f}: network \"{name}\": driver \"{d}\" is not supported (only bridge)");
        }
    }
    Ok(Network {
        labels: raw
            .labels
            .map(|l| key_values(l, &Variables::default()))
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.unwrap_or_default()))
            .collect(),
    })
}

pub(super) fn service(
    f: &str,
    name: &str,
    raw: RawService,
    configs: &BTreeMap<String, PathBuf>,
    vars: &Variables,
) -> Result<Service> {
    let ctx = |msg: String| anyhow::anyhow!("{f}: service \"{name}\": {msg}");
    let Some(image) = raw.image else {
        return Err(ctx("\"image\" is required (build is not supported)".into()));
    };
    let mut s = Service {
        name: name.to_string(),
        image,
        hostname: raw.hostname,
        container_name: raw.container_name,
        security_opt: raw.security_opt.unwrap_or_default(),
        user: raw.user.map(|u| u.to_text()),
        working_dir: raw.working_dir,
        ..Default::default()
    };
    if let Some(r) = raw.restart.as_deref() {
        if r != "no" {
            crate::progress::notice(&format!(
                "warning: {f}: service \"{name}\": restart \"{r}\" is ignored; containers are \
                 never restarted"
            ));
        }
    }
    s.command = raw
        .command
        .map(|c| split_command(c).map_err(|e| ctx(format!("command: {e}"))))
        .transpose()?;
    s.entrypoint = raw
        .entrypoint
        .map(|c| split_command(c).map_err(|e| ctx(format!("entrypoint: {e}"))))
        .transpose()?;
    if let Some(env) = raw.environment {
        // A variable named without a value is taken from the environment, or left out if unset.
        s.environment = key_values(env, vars)
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| format!("{k}={v}")))
            .collect();
    }
    if let Some(labels) = raw.labels {
        s.labels = key_values(labels, &Variables::default())
            .into_iter()
            .map(|(k, v)| (k, v.unwrap_or_default()))
            .collect();
    }
    for p in raw.ports.unwrap_or_default() {
        s.ports
            .push(parse_port(&p).map_err(|e| ctx(format!("ports: {e}")))?);
    }
    s.mounts = mounts(raw.volumes, raw.configs, configs).map_err(ctx)?;
    if let Some(h) = raw.healthcheck {
        s.healthcheck = Some(healthcheck(h).map_err(|e| ctx(format!("healthcheck: {e}")))?);
    }
    s.depends_on = dependencies(raw.depends_on).map_err(ctx)?;
    s.networks = networks(raw.networks);
    s.tmpfs = match raw.tmpfs {
        None => Vec::new(),
        Some(StringOrList::String(t)) => vec![t],
        Some(StringOrList::List(l)) => l,
    };
    // Empty means unset, so a file can say `cpuset: ${SERVICES_CPUSET:-}`.
    s.cpuset = match raw.cpuset.map(|c| c.to_text()) {
        Some(c) if c.is_empty() => None,
        Some(c) if crate::settings::cpuset::is_cpu_list(&c) => Some(c),
        Some(c) => {
            return Err(ctx(format!(
                "cpuset \"{c}\": expected CPU numbers and ranges such as 0, 0-1 or 0,2"
            )))
        }
        None => None,
    };
    if s.depends_on.contains_key(name) {
        return Err(ctx("depends_on itself".into()));
    }
    Ok(s)
}

/// A service's bind mounts: its `volumes` (host paths), then its `configs` as read-only files.
fn mounts(
    volumes: Option<Vec<VolumeSpec>>,
    refs: Option<Vec<ServiceConfigRef>>,
    configs: &BTreeMap<String, PathBuf>,
) -> Result<Vec<BindMount>, String> {
    let mut mounts = Vec::new();
    for v in volumes.unwrap_or_default() {
        mounts.push(match v {
            VolumeSpec::Short(text) => {
                let parts: Vec<&str> = text.split(':').collect();
                BindMount {
                    source: PathBuf::from(parts[0]),
                    target: parts[1].to_string(),
                    read_only: parts.get(2) == Some(&"ro"),
                }
            }
            VolumeSpec::Long(l) => BindMount {
                source: PathBuf::from(l.source),
                target: l.target,
                read_only: l.read_only,
            },
        });
    }
    for c in refs.unwrap_or_default() {
        let (source, target) = match c {
            ServiceConfigRef::Short(n) => (n.clone(), format!("/{n}")),
            ServiceConfigRef::Long(l) => {
                let t = l.target.unwrap_or_else(|| format!("/{}", l.source));
                (l.source, t)
            }
        };
        let Some(path) = configs.get(&source) else {
            return Err(format!(
                "config \"{source}\" is not declared under top-level configs"
            ));
        };
        mounts.push(BindMount {
            source: path.clone(),
            target,
            read_only: true,
        });
    }
    Ok(mounts)
}

/// A service's `depends_on`, each with its condition (`service_started` when a list names it).
fn dependencies(raw: Option<RawDependsOn>) -> Result<BTreeMap<String, Condition>, String> {
    let mut deps = BTreeMap::new();
    match raw {
        None => {}
        Some(RawDependsOn::List(l)) => {
            for d in l {
                deps.insert(d, Condition::ServiceStarted);
            }
        }
        Some(RawDependsOn::Map(m)) => {
            for (d, dep) in m {
                let cond = match dep.condition.as_deref().unwrap_or("service_started") {
                    "service_started" => Condition::ServiceStarted,
                    "service_healthy" => Condition::ServiceHealthy,
                    "service_completed_successfully" => Condition::ServiceCompletedSuccessfully,
                    other => {
                        return Err(format!(
                            "depends_on \"{d}\": unknown condition \"{other}\" (service_started, service_healthy, service_completed_successfully)"
                        ))
                    }
                };
                deps.insert(d, cond);
            }
        }
    }
    Ok(deps)
}

/// A service's `networks` with their aliases; `default` when it names none.
fn networks(raw: Option<RawServiceNetworks>) -> BTreeMap<String, Vec<String>> {
    let mut networks = BTreeMap::new();
    match raw {
        None => {
            networks.insert("default".to_string(), Vec::new());
        }
        Some(RawServiceNetworks::List(l)) => {
            for n in l {
                networks.insert(n, Vec::new());
            }
        }
        Some(RawServiceNetworks::Map(m)) => {
            for (n, settings) in m {
                networks.insert(n, settings.map(|x| x.aliases).unwrap_or_default());
            }
        }
    }
    networks
}

/// Map or `KEY=VALUE` list; `None` values mean "no value given".
fn key_values(m: MapOrList, vars: &Variables) -> BTreeMap<String, Option<String>> {
    match m {
        MapOrList::Map(m) => m
            .into_iter()
            .map(|(k, v)| {
                let v = v.map(|v| v.to_text()).or_else(|| vars.get(&k));
                (k, v)
            })
            .collect(),
        MapOrList::List(l) => l
            .into_iter()
            .map(|item| match item.split_once('=') {
                Some((k, v)) => (k.to_string(), Some(v.to_string())),
                None => {
                    let v = vars.get(&item);
                    (item, v)
                }
            })
            .collect(),
    }
}

fn split_command(c: StringOrList) -> Result<Vec<String>> {
    match c {
        StringOrList::List(l) => Ok(l),
        StringOrList::String(s) => shell_split(&s),
    }
}

/// Splits a command string the way a POSIX shell would split words (quotes and backslashes).
pub(super) fn shell_split(s: &str) -> Result<Vec<String>> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(x) => cur.push(x),
                        None => bail!("unterminated single quote in {s:?}"),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(x @ ('"' | '\\' | '$' | '`')) => cur.push(x),
                            Some(x) => {
                                cur.push('\\');
                                cur.push(x);
                            }
                            None => bail!("unterminated double quote in {s:?}"),
                        },
                        Some(x) => cur.push(x),
                        None => bail!("unterminated double quote in {s:?}"),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(x) = chars.next() {
                    cur.push(x);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

fn parse_port(p: &PortSpec) -> Result<PortMapping> {
    let text = match p {
        PortSpec::Number(n) => n.to_string(),
        PortSpec::Short(s) => s.clone(),
    };
    let (spec, protocol) = match text.rsplit_once('/') {
        Some((spec, proto)) => (spec, proto.to_string()),
        None => (text.as_str(), "tcp".to_string()),
    };
    if protocol != "tcp" && protocol != "udp" {
        bail!("\"{text}\": protocol must be tcp or udp");
    }
    let port = |s: &str| -> Result<u16> {
        s.parse::<u16>().map_err(|_| {
            anyhow::anyhow!("\"{text}\": \"{s}\" is not a port number (ranges are not supported)")
        })
    };
    let parts: Vec<&str> = spec.split(':').collect();
    let (host_ip, host_port, container) = match parts.as_slice() {
        [c] => (None, None, *c),
        [h, c] => (None, Some(port(h)?), *c),
        [ip, h, c] => (
            Some(ip.to_string()),
            if h.is_empty() { None } else { Some(port(h)?) },
            *c,
        ),
        _ => bail!("\"{text}\": expected \"C\", \"H:C\" or \"IP:H:C\""),
    };
    Ok(PortMapping {
        host_ip,
        host_port,
        container_port: port(container)?,
        protocol,
    })
}

fn healthcheck(h: super::file::RawHealthcheck) -> Result<Healthcheck> {
    let dur = |v: &Option<String>| v.as_deref().map(parse_duration).transpose();
    let test = if h.disable {
        vec!["NONE".to_string()]
    } else {
        match h.test {
            None => bail!("\"test\" is required unless disable: true"),
            Some(StringOrList::String(s)) => vec!["CMD-SHELL".to_string(), s],
            Some(StringOrList::List(l)) => {
                match l.first().map(String::as_str) {
                    Some("CMD") | Some("CMD-SHELL") | Some("NONE") => {}
                    _ => bail!("test list must start with CMD, CMD-SHELL or NONE"),
                }
                l
            }
        }
    };
    Ok(Healthcheck {
        test,
        interval: dur(&h.interval)?,
        timeout: dur(&h.timeout)?,
        retries: h.retries,
        start_period: dur(&h.start_period)?,
    })
}

/// Parses a Compose duration: `1s`, `500ms`, `1m30s`, `2h`, `1.5s`, `10us`.
pub(crate) fn parse_duration(s: &str) -> Result<Duration> {
    let text = s.trim();
    if text.is_empty() {
        bail!("empty duration");
    }
    let mut total = 0f64;
    let mut rest = text;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_len == 0 {
            bail!("invalid duration {s:?} (examples: 1s, 500ms, 1m30s)");
        }
        let n: f64 = rest[..num_len]
            .parse()
            .map_err(|_| anyhow::anyhow!("invalid duration {s:?}"))?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => bail!("invalid duration {s:?}: unit must be one of h, m, s, ms, us, ns"),
        };
        total += n * scale;
        rest = &rest[unit_len..];
    }
    Ok(Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1s").unwrap(), Duration::from_secs(1));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert!(parse_duration("10").is_err());
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn ports() {
        let p = |s: &str| parse_port(&PortSpec::Short(s.into()));
        assert_eq!(
            p("9092").unwrap(),
            PortMapping {
                host_ip: None,
                host_port: None,
                container_port: 9092,
                protocol: "tcp".into()
            }
        );
        assert_eq!(p("19092:9092").unwrap().host_port, Some(19092));
        let full = p("127.0.0.1:8080:80/udp").unwrap();
        assert_eq!(full.host_ip.as_deref(), Some("127.0.0.1"));
        assert_eq!(full.host_port, Some(8080));
        assert_eq!(full.container_port, 80);
        assert_eq!(full.protocol, "udp");
        assert!(p("8000-8010:80").is_err());
        assert!(p("80/sctp").is_err());
        assert_eq!(
            parse_port(&PortSpec::Number(80)).unwrap().container_port,
            80
        );
    }

    #[test]
    fn shell_words() {
        assert_eq!(
            shell_split(r#"sh -c "echo 'a b' \"q\"" plain\ word"#).unwrap(),
            vec!["sh", "-c", "echo 'a b' \"q\"", "plain word"]
        );
        assert_eq!(shell_split("  a   b ").unwrap(), vec!["a", "b"]);
        assert_eq!(shell_split("''").unwrap(), vec![""]);
        assert!(shell_split("'open").is_err());
    }
}

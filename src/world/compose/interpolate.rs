//! Compose variable interpolation (`${VAR}`, `$VAR`, `${VAR:-default}`, `${VAR-default}`,
//! `${VAR:?message}`, `${VAR?message}`, `$$`), applied to every string value of a Compose file.

use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::path::Path;

/// Where variable values come from, highest precedence first: the runner's settings, the
/// process environment, then the `.env` file beside the Compose file.
#[derive(Debug, Clone, Default)]
pub(crate) struct Variables {
    settings: BTreeMap<String, String>,
    dotenv: BTreeMap<String, String>,
    use_process_env: bool,
}

impl Variables {
    /// Settings overlaid on the process environment, overlaid on `.env` in `dir` (if present).
    pub(crate) fn new(settings: &BTreeMap<String, String>, dir: &Path) -> Result<Self> {
        let dotenv_path = dir.join(".env");
        let dotenv = if dotenv_path.is_file() {
            parse_dotenv(&dotenv_path)?
        } else {
            BTreeMap::new()
        };
        Ok(Self {
            settings: settings.clone(),
            dotenv,
            use_process_env: true,
        })
    }

    /// Only the given values: no process environment and no `.env` file.
    #[cfg(test)]
    pub(crate) fn only(values: &BTreeMap<String, String>) -> Self {
        Self {
            settings: values.clone(),
            dotenv: BTreeMap::new(),
            use_process_env: false,
        }
    }

    /// The value of `name`, if set anywhere.
    pub(crate) fn get(&self, name: &str) -> Option<String> {
        if let Some(v) = self.settings.get(name) {
            return Some(v.clone());
        }
        if self.use_process_env {
            if let Ok(v) = std::env::var(name) {
                return Some(v);
            }
        }
        self.dotenv.get(name).cloned()
    }
}

/// Reads a `.env` file: `KEY=VALUE` lines, `#` comments, optional `export ` prefix and quotes.
pub(crate) fn parse_dotenv(path: &Path) -> Result<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((key, value)) = line.split_once('=') else {
            bail!(
                "{}:{}: expected KEY=VALUE, found {line:?}",
                path.display(),
                i + 1
            );
        };
        let value = value.trim();
        let value = if value.len() >= 2
            && ((value.starts_with('"') && value.ends_with('"'))
                || (value.starts_with('\'') && value.ends_with('\'')))
        {
            &value[1..value.len() - 1]
        } else {
            value
        };
        out.insert(key.trim().to_string(), value.to_string());
    }
    Ok(out)
}

/// Interpolates one string. `unset` collects plain variables that were unset (they become "").
/// Errors carry only the variable and message; the caller adds file and location.
pub(crate) fn interpolate(
    input: &str,
    vars: &Variables,
    unset: &mut Vec<String>,
) -> Result<String> {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(r) = after.strip_prefix('$') {
            out.push('$');
            rest = r;
        } else if let Some(r) = after.strip_prefix('{') {
            let end = matching_brace(r)
                .ok_or_else(|| anyhow::anyhow!("unterminated \"${{\" in {input:?}"))?;
            out.push_str(&expand_braced(&r[..end], vars, unset)?);
            rest = &r[end + 1..];
        } else {
            let len = after
                .char_indices()
                .find(|(i, c)| {
                    !(c.is_ascii_alphanumeric() || *c == '_') || (*i == 0 && c.is_ascii_digit())
                })
                .map(|(i, _)| i)
                .unwrap_or(after.len());
            if len == 0 {
                // A lone "$" followed by something that is not a name stays as written.
                out.push('$');
                rest = after;
            } else {
                let name = &after[..len];
                out.push_str(&lookup_plain(name, vars, unset));
                rest = &after[len..];
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Index of the `}` closing a `${`, allowing nested `${...}` in defaults.
fn matching_brace(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'$' if bytes.get(i + 1) == Some(&b'{') => {
                depth += 1;
                i += 1;
            }
            b'}' if depth == 0 => return Some(i),
            b'}' => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    None
}

fn lookup_plain(name: &str, vars: &Variables, unset: &mut Vec<String>) -> String {
    match vars.get(name) {
        Some(v) => v,
        None => {
            if !unset.iter().any(|u| u == name) {
                unset.push(name.to_string());
            }
            String::new()
        }
    }
}

fn expand_braced(body: &str, vars: &Variables, unset: &mut Vec<String>) -> Result<String> {
    let name_len = body
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(body.len());
    let name = &body[..name_len];
    if name.is_empty() {
        bail!("invalid variable reference \"${{{body}}}\"");
    }
    let op = &body[name_len..];
    let value = vars.get(name);
    if op.is_empty() {
        return Ok(lookup_plain(name, vars, unset));
    }
    let (kind, arg) = if let Some(a) = op.strip_prefix(":-") {
        (":-", a)
    } else if let Some(a) = op.strip_prefix(":?") {
        (":?", a)
    } else if let Some(a) = op.strip_prefix(":+") {
        (":+", a)
    } else if let Some(a) = op.strip_prefix('-') {
        ("-", a)
    } else if let Some(a) = op.strip_prefix('?') {
        ("?", a)
    } else if let Some(a) = op.strip_prefix('+') {
        ("+", a)
    } else {
        bail!("invalid variable reference \"${{{body}}}\"");
    };
    let empty_counts_as_unset = kind.starts_with(':');
    let is_set = match &value {
        Some(v) => !(empty_counts_as_unset && v.is_empty()),
        None => false,
    };
    match kind.trim_start_matches(':') {
        "-" => {
            if is_set {
                Ok(value.unwrap_or_default())
            } else {
                interpolate(arg, vars, unset)
            }
        }
        "+" => {
            if is_set {
                interpolate(arg, vars, unset)
            } else {
                Ok(String::new())
            }
        }
        _ => {
            if is_set {
                Ok(value.unwrap_or_default())
            } else {
                let message = interpolate(arg, vars, unset)?;
                let what = if empty_counts_as_unset {
                    "is required (unset or empty)"
                } else {
                    "is required (unset)"
                };
                if message.is_empty() {
                    bail!("variable {name} {what}");
                }
                bail!("variable {name} {what}: {message}");
            }
        }
    }
}

/// Interpolates every string scalar in a YAML tree (keys are left as written, as Compose does).
/// `path` names the location for error messages (e.g. `services.proxy.image`).
pub(crate) fn interpolate_value(
    value: &mut yaml_serde::Value,
    vars: &Variables,
    path: &mut Vec<String>,
    unset: &mut Vec<String>,
) -> Result<()> {
    use yaml_serde::Value;
    match value {
        Value::String(s) => {
            let new = interpolate(s, vars, unset)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.join(".")))?;
            *s = new;
        }
        Value::Sequence(seq) => {
            for (i, v) in seq.iter_mut().enumerate() {
                path.push(i.to_string());
                interpolate_value(v, vars, path, unset)?;
                path.pop();
            }
        }
        Value::Mapping(map) => {
            for (k, v) in map.iter_mut() {
                path.push(match k {
                    Value::String(s) => s.clone(),
                    other => yaml_serde::to_string(other)
                        .unwrap_or_default()
                        .trim()
                        .to_string(),
                });
                interpolate_value(v, vars, path, unset)?;
                path.pop();
            }
        }
        Value::Tagged(t) => interpolate_value(&mut t.value, vars, path, unset)?,
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Variables {
        let mut m = BTreeMap::new();
        m.insert("SET".to_string(), "value".to_string());
        m.insert("EMPTY".to_string(), String::new());
        Variables::only(&m)
    }

    fn run(s: &str) -> Result<String> {
        interpolate(s, &vars(), &mut Vec::new())
    }

    #[test]
    fn forms() {
        let table = [
            ("${SET}", "value"),
            ("$SET", "value"),
            ("a-$SET-b", "a-value-b"),
            ("${SET}x", "valuex"),
            ("${UNSET}", ""),
            ("$UNSET/x", "/x"),
            ("${UNSET:-def}", "def"),
            ("${EMPTY:-def}", "def"),
            ("${EMPTY-def}", ""),
            ("${UNSET-def}", "def"),
            ("${SET:-def}", "value"),
            ("${SET:?boom}", "value"),
            ("${EMPTY?boom}", ""),
            ("${SET:+alt}", "alt"),
            ("${UNSET:+alt}", ""),
            ("$$", "$"),
            ("$${SET}", "${SET}"),
            ("cost $$5", "cost $5"),
            ("${UNSET:-${SET}}", "value"),
            ("100$", "100$"),
            ("no vars", "no vars"),
        ];
        for (input, want) in table {
            assert_eq!(run(input).unwrap(), want, "input {input:?}");
        }
    }

    #[test]
    fn required_errors_name_variable_and_message() {
        let e = run("${UNSET:?set it please}").unwrap_err().to_string();
        assert!(e.contains("UNSET") && e.contains("set it please"), "{e}");
        let e = run("${EMPTY:?must not be empty}").unwrap_err().to_string();
        assert!(
            e.contains("EMPTY") && e.contains("must not be empty"),
            "{e}"
        );
        let e = run("${UNSET?gone}").unwrap_err().to_string();
        assert!(e.contains("UNSET") && e.contains("gone"), "{e}");
    }

    #[test]
    fn unset_plain_variables_are_reported() {
        let mut unset = Vec::new();
        interpolate("$A ${B} ${C:-x} $A", &vars(), &mut unset).unwrap();
        assert_eq!(unset, vec!["A".to_string(), "B".to_string()]);
    }

    #[test]
    fn malformed_references_are_errors() {
        assert!(run("${SET").is_err());
        assert!(run("${}").is_err());
        assert!(run("${SET!x}").is_err());
    }
}

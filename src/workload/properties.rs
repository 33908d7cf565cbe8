//! Client properties: Java client names (as given to Apache Kafka's perf tools) mapped to
//! librdkafka names, then validated by librdkafka itself.
//!
//! librdkafka already accepts many Java names as aliases (`acks`, `linger.ms`, `retries`,
//! `compression.type`, `delivery.timeout.ms`, `max.in.flight.requests.per.connection` …), so
//! only the names and units that differ are translated here. Anything librdkafka does not know
//! after translation is refused when the configuration is built, naming the key.

use anyhow::{anyhow, bail, Context, Result};
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::error::KafkaError;
use rdkafka::ClientConfig;

/// One property as librdkafka will receive it, remembering the name the user wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Property {
    /// The key as given (Java or librdkafka name).
    pub given: String,
    /// The librdkafka key.
    pub key: String,
    /// The librdkafka value.
    pub value: String,
}

/// Properties translated for librdkafka, plus warnings about Java-only keys that were ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Mapped {
    pub properties: Vec<Property>,
    pub warnings: Vec<String>,
}

/// Java-only keys that do not change what the workload measures; ignored with a warning.
const IGNORED: &[(&str, &str)] = &[
    ("key.serializer", "the workload sends raw bytes"),
    ("value.serializer", "the workload sends raw bytes"),
    ("key.deserializer", "the workload reads raw bytes"),
    ("value.deserializer", "the workload reads raw bytes"),
    ("max.block.ms", "the workload always waits for queue space"),
    (
        "ssl.protocol",
        "librdkafka negotiates the TLS version with OpenSSL",
    ),
    (
        "ssl.enabled.protocols",
        "librdkafka negotiates the TLS version with OpenSSL",
    ),
    (
        "ssl.truststore.type",
        "the trust store is given as PEM (ssl.ca.location)",
    ),
    ("metric.reporters", "Java metrics reporters do not apply"),
    (
        "auto.include.jmx.reporter",
        "Java metrics reporters do not apply",
    ),
    ("partitioner.ignore.keys", "records carry no key"),
];

/// Java-only keys that would change behaviour and have no librdkafka equivalent.
const REFUSED: &[(&str, &str)] = &[
    (
        "ssl.truststore.location",
        "librdkafka reads no Java trust store; give a PEM file as ssl.ca.location",
    ),
    (
        "ssl.truststore.password",
        "librdkafka reads no Java trust store; give a PEM file as ssl.ca.location",
    ),
    (
        "partitioner.class",
        "Java partitioners do not apply; librdkafka's is chosen with `partitioner`",
    ),
    ("interceptor.classes", "Java interceptors do not apply"),
];

/// Parses one `key=value` pair.
pub(crate) fn parse_pair(text: &str) -> Result<(String, String)> {
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| anyhow!("property `{text}` is not of the form key=value"))?;
    let key = key.trim();
    if key.is_empty() {
        bail!("property `{text}` has an empty key");
    }
    Ok((key.to_string(), value.trim().to_string()))
}

/// Translates Java client names and units to librdkafka; refuses Java-only keys that matter.
pub(crate) fn map_java(props: &[(String, String)]) -> Result<Mapped> {
    let mut mapped = Mapped::default();
    for (given, value) in props {
        let given = given.trim();
        let value = value.trim();
        if let Some((_, why)) = IGNORED.iter().find(|(k, _)| *k == given) {
            mapped
                .warnings
                .push(format!("property `{given}` ignored: {why}"));
            continue;
        }
        if let Some((_, why)) = REFUSED.iter().find(|(k, _)| *k == given) {
            bail!("property `{given}` is not supported: {why}");
        }
        for (key, value) in librdkafka(given, value)? {
            mapped.properties.push(Property {
                given: given.to_string(),
                key,
                value,
            });
        }
    }
    Ok(mapped)
}

/// The librdkafka properties of Java client property `given` = `value` (none for a Java
/// setting librdkafka needs no counterpart of); a value librdkafka cannot take is refused.
fn librdkafka(given: &str, value: &str) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut push = |key: &str, value: String| out.push((key.to_string(), value));
    match given {
        "acks" => {
            let v = match value.to_ascii_lowercase().as_str() {
                "all" | "-1" => "all",
                "0" => "0",
                "1" => "1",
                _ => bail!("property `acks` = `{value}`: expected all, -1, 0 or 1"),
            };
            push("acks", v.to_string());
        }
        "compression.type" => {
            let v = value.to_ascii_lowercase();
            if !["none", "gzip", "snappy", "lz4", "zstd"].contains(&v.as_str()) {
                bail!(
                    "property `compression.type` = `{value}`: expected none, gzip, snappy, lz4 or zstd"
                );
            }
            push("compression.type", v);
        }
        "compression.gzip.level" | "compression.lz4.level" | "compression.zstd.level" => {
            push("compression.level", value.to_string())
        }
        "buffer.memory" => {
            let bytes: u64 = value.parse().map_err(|_| {
                anyhow!("property `buffer.memory` = `{value}`: expected a number of bytes")
            })?;
            push(
                "queue.buffering.max.kbytes",
                bytes.div_ceil(1024).to_string(),
            );
        }
        "max.request.size" => push("message.max.bytes", value.to_string()),
        // Java's -1 (operating-system default) is librdkafka's 0.
        "send.buffer.bytes" => push("socket.send.buffer.bytes", socket_buffer(value)),
        "receive.buffer.bytes" => push("socket.receive.buffer.bytes", socket_buffer(value)),
        "fetch.max.wait.ms" => push("fetch.wait.max.ms", value.to_string()),
        "ssl.truststore.certificates" => push("ssl.ca.pem", value.to_string()),
        "ssl.keystore.certificate.chain" => push("ssl.certificate.pem", value.to_string()),
        "ssl.keystore.key" => push("ssl.key.pem", value.to_string()),
        "ssl.keystore.type" => {
            if !value.eq_ignore_ascii_case("PKCS12") {
                bail!(
                    "property `ssl.keystore.type` = `{value}`: librdkafka reads PKCS12 key stores only"
                );
            }
        }
        "ssl.endpoint.identification.algorithm" => {
            let v = if value.is_empty() {
                "none".to_string()
            } else {
                value.to_ascii_lowercase()
            };
            push("ssl.endpoint.identification.algorithm", v);
        }
        "sasl.jaas.config" => {
            let (user, password) = jaas_credentials(value)?;
            push("sasl.username", user);
            push("sasl.password", password);
        }
        _ => push(given, value.to_string()),
    }
    Ok(out)
}

fn socket_buffer(value: &str) -> String {
    if value == "-1" {
        "0".to_string()
    } else {
        value.to_string()
    }
}

/// Extracts `username="…" password="…"` from a PLAIN / SCRAM JAAS line.
fn jaas_credentials(value: &str) -> Result<(String, String)> {
    let field = |name: &str| -> Option<String> {
        let re = regex::Regex::new(&format!(r#"{name}\s*=\s*"([^"]*)""#)).ok()?;
        re.captures(value).map(|c| c[1].to_string())
    };
    match (field("username"), field("password")) {
        (Some(u), Some(p)) => Ok((u, p)),
        _ => bail!(
            "property `sasl.jaas.config`: only username=\"…\" password=\"…\" logins are supported; \
             give sasl.username and sasl.password instead"
        ),
    }
}

/// Builds a librdkafka configuration: fixed settings first, then the user's properties
/// (client-wide, then role-specific), each validated by librdkafka, errors naming the key.
pub fn client_config(
    bootstrap: &str,
    fixed: &[(&str, &str)],
    layers: &[&[(String, String)]],
) -> Result<(ClientConfig, Vec<String>)> {
    let mut config = ClientConfig::new();
    // rdkafka derives librdkafka's log level from the `log` crate, which is off without a
    // logger; warnings are needed so that failures can name their cause.
    config.set_log_level(RDKafkaLogLevel::Warning);
    config.set("bootstrap.servers", bootstrap);
    for (k, v) in fixed {
        config.set(*k, *v);
    }
    let mut warnings = Vec::new();
    let mut all = Vec::new();
    for layer in layers {
        let mapped = map_java(layer)?;
        warnings.extend(mapped.warnings);
        all.extend(mapped.properties);
    }
    for p in &all {
        config.set(&p.key, &p.value);
    }
    validate(&config, &all)?;
    Ok((config, warnings))
}

/// Lets librdkafka check every key and value, translating its complaint into one naming the key.
fn validate(config: &ClientConfig, given: &[Property]) -> Result<()> {
    match config.create_native_config() {
        Ok(_) => Ok(()),
        Err(KafkaError::ClientConfig(_, desc, key, value)) => {
            let origin = given.iter().rev().find(|p| p.key == key);
            match origin {
                Some(p) if p.given != p.key => bail!(
                    "property `{}` (librdkafka `{}`) = `{}`: {}",
                    p.given,
                    key,
                    value,
                    desc
                ),
                _ => bail!("property `{key}` = `{value}`: {desc}"),
            }
        }
        Err(e) => Err(e).context("building the Kafka client configuration"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn key_values(mapped: &Mapped) -> Vec<(&str, &str)> {
        mapped
            .properties
            .iter()
            .map(|p| (p.key.as_str(), p.value.as_str()))
            .collect()
    }

    #[test]
    fn java_names_and_units_are_mapped() {
        let mapped = map_java(&pairs(&[
            ("acks", "-1"),
            ("buffer.memory", "33554433"),
            ("max.request.size", "2097152"),
            ("send.buffer.bytes", "-1"),
            ("compression.type", "LZ4"),
            ("ssl.endpoint.identification.algorithm", ""),
            ("linger.ms", "5"),
        ]))
        .unwrap();
        assert_eq!(
            key_values(&mapped),
            vec![
                ("acks", "all"),
                ("queue.buffering.max.kbytes", "32769"),
                ("message.max.bytes", "2097152"),
                ("socket.send.buffer.bytes", "0"),
                ("compression.type", "lz4"),
                ("ssl.endpoint.identification.algorithm", "none"),
                ("linger.ms", "5"),
            ]
        );
        assert!(mapped.warnings.is_empty());
    }

    #[test]
    fn mapped_java_names_are_accepted_by_librdkafka() {
        let props = pairs(&[
            ("acks", "all"),
            ("buffer.memory", "33554432"),
            ("max.in.flight.requests.per.connection", "5"),
            ("delivery.timeout.ms", "120000"),
            ("batch.size", "16384"),
            ("retries", "3"),
            ("enable.idempotence", "true"),
            ("client.id", "perf"),
        ]);
        client_config("127.0.0.1:9092", &[], &[&props]).unwrap();
    }

    #[test]
    fn unknown_property_is_refused_naming_it() {
        let props = pairs(&[("acks", "all"), ("no.such.property", "1")]);
        let err = client_config("127.0.0.1:9092", &[], &[&props])
            .unwrap_err()
            .to_string();
        assert!(err.contains("no.such.property"), "{err}");
    }

    #[test]
    fn bad_value_of_mapped_key_names_the_given_key() {
        let props = pairs(&[("max.request.size", "lots")]);
        let err = client_config("127.0.0.1:9092", &[], &[&props])
            .unwrap_err()
            .to_string();
        assert!(err.contains("max.request.size"), "{err}");
        assert!(err.contains("message.max.bytes"), "{err}");
    }

    #[test]
    fn java_only_keys_are_ignored_or_refused() {
        let mapped = map_java(&pairs(&[(
            "key.serializer",
            "org.apache.kafka.common.serialization.ByteArraySerializer",
        )]))
        .unwrap();
        assert!(mapped.properties.is_empty());
        assert!(mapped.warnings[0].contains("key.serializer"));
        let err = map_java(&pairs(&[("ssl.truststore.location", "/x.jks")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("ssl.truststore.location") && err.contains("ssl.ca.location"));
    }

    #[test]
    fn bad_enum_values_are_refused() {
        assert!(map_java(&pairs(&[("acks", "most")]))
            .unwrap_err()
            .to_string()
            .contains("acks"));
        assert!(map_java(&pairs(&[("compression.type", "brotli")]))
            .unwrap_err()
            .to_string()
            .contains("brotli"));
    }

    #[test]
    fn jaas_plain_login_becomes_username_and_password() {
        let mapped = map_java(&pairs(&[(
            "sasl.jaas.config",
            r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="s3cret";"#,
        )]))
        .unwrap();
        assert_eq!(
            key_values(&mapped),
            vec![("sasl.username", "alice"), ("sasl.password", "s3cret")]
        );
    }

    #[test]
    fn pairs_are_parsed() {
        assert_eq!(
            parse_pair(" linger.ms = 5 ").unwrap(),
            ("linger.ms".to_string(), "5".to_string())
        );
        assert!(parse_pair("novalue")
            .unwrap_err()
            .to_string()
            .contains("novalue"));
        assert!(parse_pair("=x").is_err());
    }
}

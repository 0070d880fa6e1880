//! The optional TOML configuration file of `coordinator serve`, and what
//! `coordinator config print` shows.
//!
//! The file's keys are the long flag names of `serve` in kebab case, without
//! the dashes (`tick-ms = 200`). There is one source of truth for names,
//! types and validation: each value in the file becomes the *default* of the
//! matching clap argument, so clap parses it exactly like a flag, and the
//! precedence flag > environment > file > built-in default falls out of
//! clap's own (a flag beats its `env`, which beats its default).

use std::{collections::BTreeMap, ffi::OsString, path::Path};

use clap::{Arg, ArgAction, ArgMatches, Command, parser::ValueSource};

/// The `serve` arguments a file may not set: the file's own path.
const NOT_IN_FILE: &[&str] = &["config"];

/// Exit code of a bad configuration file (clap uses 2 for bad flags too).
pub const EXIT_BAD_CONFIG: u8 = 2;

/// A configuration file that parsed and whose every value is valid for its flag.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    /// Where it was read from (for messages).
    pub path: String,
    /// Argument id → the value as clap would read it from the command line.
    values: BTreeMap<String, String>,
}

impl ConfigFile {
    /// Whether the file sets the argument `id`.
    pub fn sets(&self, id: &str) -> bool {
        self.values.contains_key(id)
    }

    /// Reads and checks the file at `path` against the arguments of `serve`.
    pub fn load(path: &Path, serve: &Command) -> Result<ConfigFile, String> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read config file {shown}: {e}"))?;
        ConfigFile::parse(&shown, &text, serve)
    }

    /// Checks `text` (the contents of `path`) against the arguments of `serve`.
    pub fn parse(path: &str, text: &str, serve: &Command) -> Result<ConfigFile, String> {
        let table: toml::Table = text
            .parse()
            .map_err(|e| format!("config file {path} is not valid TOML: {e}"))?;
        let args = file_args(serve);
        let mut values = BTreeMap::new();
        for (key, value) in &table {
            let Some(arg) = args.iter().find(|a| a.get_long() == Some(key.as_str())) else {
                return Err(unknown_key(path, key, &args));
            };
            let raw = scalar_text(arg, value).map_err(|why| {
                format!(
                    "config file {path}: `{key}` {why} (found {})",
                    value.type_str()
                )
            })?;
            check_value(arg, &raw)
                .map_err(|why| format!("config file {path}: `{key} = {value}`: {why}"))?;
            values.insert(arg.get_id().to_string(), raw);
        }
        Ok(ConfigFile {
            path: path.to_owned(),
            values,
        })
    }

    /// `cmd` (the whole CLI) with the file's values as the defaults of the
    /// arguments of the subcommand at `sub_path` (e.g. `["serve"]`).
    pub fn apply(&self, cmd: Command, sub_path: &[&str]) -> Command {
        let Some((first, rest)) = sub_path.split_first() else {
            let mut cmd = cmd;
            for (id, raw) in &self.values {
                // clap's defaults are `&'static str` (without its `string`
                // feature); a few short strings leak once per process start.
                let raw: &'static str = Box::leak(raw.clone().into_boxed_str());
                cmd = cmd.mut_arg(id, |a| a.default_value(raw));
            }
            return cmd;
        };
        cmd.mut_subcommand(first, |sub| self.apply(sub, rest))
    }
}

/// The arguments of `serve` a file may set.
fn file_args(serve: &Command) -> Vec<&Arg> {
    serve
        .get_arguments()
        .filter(|a| a.get_long().is_some() && !a.is_global_set())
        .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
        .filter(|a| !NOT_IN_FILE.contains(&a.get_id().as_str()))
        .collect()
}

fn unknown_key(path: &str, key: &str, args: &[&Arg]) -> String {
    let kebab = key.replace('_', "-");
    let hint = if args.iter().any(|a| a.get_long() == Some(kebab.as_str())) {
        format!("; keys are written in kebab case: did you mean `{kebab}`?")
    } else {
        " (keys are the long flags of `coordinator serve` without the dashes, e.g. `tick-ms`; \
         `coordinator serve --help` lists them)"
            .to_owned()
    };
    format!("config file {path}: unknown key `{key}`{hint}")
}

/// Whether `arg` is an on/off switch (`--no-engine`) rather than a flag with a value.
fn is_switch(arg: &Arg) -> bool {
    matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse)
}

/// The text of a TOML value as it would be typed after the flag.
fn scalar_text(arg: &Arg, value: &toml::Value) -> Result<String, &'static str> {
    match value {
        toml::Value::Boolean(b) if is_switch(arg) => Ok(b.to_string()),
        _ if is_switch(arg) => Err("must be true or false"),
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::Float(f) => Ok(f.to_string()),
        toml::Value::Boolean(b) => Ok(b.to_string()),
        _ => Err("must be a string, a number or a boolean"),
    }
}

/// Parses `raw` with `arg`'s own value parser, so a type error names the key
/// now instead of surfacing later as a flag error.
fn check_value(arg: &Arg, raw: &str) -> Result<(), String> {
    if is_switch(arg) {
        return Ok(());
    }
    // Without its environment variable: the file's value is being checked, not the env's.
    let probe = Command::new("config")
        .no_binary_name(true)
        .arg(arg.clone().env(None).required(false));
    let long = format!("--{}", arg.get_long().unwrap_or_default());
    match probe.try_get_matches_from([OsString::from(long), OsString::from(raw)]) {
        Ok(_) => Ok(()),
        Err(e) => {
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or_default();
            Err(first.trim_start_matches("error: ").to_owned())
        }
    }
}

/// Where an effective value came from.
fn source(matches: &ArgMatches, id: &str, file: Option<&ConfigFile>) -> &'static str {
    match matches.value_source(id) {
        Some(ValueSource::CommandLine) => "flag",
        Some(ValueSource::EnvVariable) => "env",
        _ if file.is_some_and(|f| f.sets(id)) => "file",
        _ => "default",
    }
}

/// Whether the argument `id` holds a secret as a whole (tokens, keys,
/// passwords): one of its words is such a noun (`llm_max_tokens` is a count).
fn is_secret(id: &str) -> bool {
    id.split(['_', '-'])
        .any(|word| matches!(word, "token" | "secret" | "key" | "password" | "passwd"))
}

/// `value` with the password of a URL (user info or a `password` query
/// parameter) replaced by `****`; other text unchanged.
pub fn mask_url(value: &str) -> String {
    let Ok(mut url) = reqwest::Url::parse(value) else {
        return value.to_owned();
    };
    let mut changed = false;
    if url.password().is_some() {
        changed |= url.set_password(Some("****")).is_ok();
    }
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    if pairs
        .iter()
        .any(|(k, _)| is_secret(&k.to_ascii_lowercase()))
    {
        let mut query = url.query_pairs_mut();
        query.clear();
        for (k, v) in &pairs {
            let v = if is_secret(&k.to_ascii_lowercase()) {
                "****"
            } else {
                v
            };
            query.append_pair(k, v);
        }
        drop(query);
        changed = true;
    }
    if changed {
        url.to_string()
    } else {
        value.to_owned()
    }
}

/// The TOML text of a value: a boolean for switches, a number when it reads
/// as one, otherwise a string.
fn toml_value(arg: &Arg, raw: &str) -> toml::Value {
    if is_switch(arg) {
        return toml::Value::Boolean(raw == "true");
    }
    if let Ok(i) = raw.parse::<i64>() {
        return toml::Value::Integer(i);
    }
    let numeric = !raw.is_empty()
        && raw
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E'));
    match raw.parse::<f64>() {
        Ok(f) if numeric && f.is_finite() => toml::Value::Float(f),
        _ => toml::Value::String(raw.to_owned()),
    }
}

/// The effective configuration of `cmd` (the `config print` subcommand, whose
/// arguments are those of `serve`) as TOML: every key with its value and,
/// as a trailing comment, where it came from; secrets masked.
pub fn render(cmd: &Command, matches: &ArgMatches, file: Option<&ConfigFile>) -> String {
    let mut out = String::from(
        "# Effective configuration of `coordinator serve` (precedence: flag > env > file > default).\n",
    );
    match file {
        Some(f) => out.push_str(&format!("# Config file: {}\n", f.path)),
        None => out.push_str("# Config file: none\n"),
    }
    out.push_str("# Secrets are shown as \"****\".\n");
    let args = file_args(cmd);
    let width = args
        .iter()
        .filter_map(|a| a.get_long())
        .map(str::len)
        .max()
        .unwrap_or(0);
    for arg in args {
        let id = arg.get_id().as_str();
        let key = arg.get_long().unwrap_or(id);
        let from = source(matches, id, file);
        let raw: Option<String> = matches
            .get_raw(id)
            .and_then(|mut v| v.next())
            .map(|v| v.to_string_lossy().into_owned());
        let line = match raw {
            None => format!("# {key:width$} (unset)"),
            Some(raw) => {
                let shown = if is_secret(id) {
                    "****".to_owned()
                } else {
                    mask_url(&raw)
                };
                let value = if is_secret(id) || shown != raw {
                    toml::Value::String(shown)
                } else {
                    toml_value(arg, &raw)
                };
                format!("{key:width$} = {value}")
            }
        };
        out.push_str(&format!("{line:<w$}  # {from}\n", w = width + 30));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serve() -> Command {
        Command::new("serve")
            .arg(
                Arg::new("tick_ms")
                    .long("tick-ms")
                    .value_parser(clap::value_parser!(u64))
                    .default_value("1000"),
            )
            .arg(
                Arg::new("listen")
                    .long("listen")
                    .value_parser(clap::value_parser!(std::net::SocketAddr)),
            )
            .arg(
                Arg::new("no_engine")
                    .long("no-engine")
                    .action(ArgAction::SetTrue),
            )
            .arg(Arg::new("bootstrap_token").long("bootstrap-token"))
            .arg(Arg::new("config").long("config"))
    }

    #[test]
    fn values_are_checked_with_the_flags_parsers() {
        let ok = ConfigFile::parse(
            "c.toml",
            "tick-ms = 250\nlisten = \"0.0.0.0:9000\"\nno-engine = true\n",
            &serve(),
        )
        .expect("valid");
        assert_eq!(ok.values["tick_ms"], "250");
        assert_eq!(ok.values["listen"], "0.0.0.0:9000");
        assert_eq!(ok.values["no_engine"], "true");

        let err = ConfigFile::parse("c.toml", "tick-ms = \"soon\"\n", &serve()).unwrap_err();
        assert!(
            err.contains("`tick-ms = \"soon\"`") && err.contains("invalid"),
            "{err}"
        );
        let err = ConfigFile::parse("c.toml", "listen = [1]\n", &serve()).unwrap_err();
        assert!(err.contains("`listen` must be a string"), "{err}");
        let err = ConfigFile::parse("c.toml", "no-engine = \"yes\"\n", &serve()).unwrap_err();
        assert!(err.contains("must be true or false"), "{err}");
    }

    #[test]
    fn unknown_keys_are_named_with_a_hint() {
        let err = ConfigFile::parse("c.toml", "tick_ms = 5\n", &serve()).unwrap_err();
        assert_eq!(
            err,
            "config file c.toml: unknown key `tick_ms`; keys are written in kebab case: did you mean `tick-ms`?"
        );
        let err = ConfigFile::parse("c.toml", "colour = 5\n", &serve()).unwrap_err();
        assert!(
            err.starts_with("config file c.toml: unknown key `colour` (keys are"),
            "{err}"
        );
        // The file cannot name another file.
        let err = ConfigFile::parse("c.toml", "config = \"x\"\n", &serve()).unwrap_err();
        assert!(err.contains("unknown key `config`"), "{err}");
    }

    #[test]
    fn precedence_is_flag_then_env_then_file_then_default() {
        let file = ConfigFile::parse(
            "c.toml",
            "tick-ms = 250\nlisten = \"0.0.0.0:9000\"\n",
            &serve(),
        )
        .expect("valid");
        let cmd = file.apply(Command::new("root").subcommand(serve()), &["serve"]);
        let m = cmd
            .clone()
            .try_get_matches_from(["root", "serve"])
            .expect("parse");
        let m = m.subcommand_matches("serve").expect("serve");
        assert_eq!(m.get_one::<u64>("tick_ms"), Some(&250));
        assert_eq!(source(m, "tick_ms", Some(&file)), "file");
        assert_eq!(source(m, "bootstrap_token", Some(&file)), "default");
        let m = cmd
            .try_get_matches_from(["root", "serve", "--tick-ms", "7"])
            .expect("parse");
        let m = m.subcommand_matches("serve").expect("serve");
        assert_eq!(m.get_one::<u64>("tick_ms"), Some(&7));
        assert_eq!(source(m, "tick_ms", Some(&file)), "flag");
    }

    #[test]
    fn secrets_and_url_passwords_are_masked() {
        assert_eq!(
            mask_url("postgres://app:s3cret@db:5432/coord"),
            "postgres://app:****@db:5432/coord"
        );
        assert_eq!(
            mask_url("postgres://db/coord?user=app&password=s3cret"),
            "postgres://db/coord?user=app&password=****"
        );
        assert_eq!(
            mask_url("postgres://app@db/coord"),
            "postgres://app@db/coord"
        );
        assert_eq!(mask_url("gpt-4o-mini"), "gpt-4o-mini");
        assert!(is_secret("bootstrap_token") && is_secret("llm_api_key"));
        assert!(!is_secret("listen") && !is_secret("tick_ms") && !is_secret("llm_max_tokens"));
    }

    #[test]
    fn printed_values_keep_their_toml_type() {
        let cmd = serve();
        let arg = |id: &str| {
            cmd.get_arguments()
                .find(|a| a.get_id() == id)
                .expect("arg")
                .clone()
        };
        assert_eq!(toml_value(&arg("tick_ms"), "250").to_string(), "250");
        assert_eq!(toml_value(&arg("tick_ms"), "0.15").to_string(), "0.15");
        assert_eq!(toml_value(&arg("no_engine"), "false").to_string(), "false");
        assert_eq!(
            toml_value(&arg("listen"), "0.0.0.0:9000").to_string(),
            "\"0.0.0.0:9000\""
        );
        assert_eq!(toml_value(&arg("listen"), "").to_string(), "\"\"");
    }
}

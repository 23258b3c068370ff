//! Reading samples out of a `/metrics` page (Prometheus text format), for the tests' helper
//! modules that scrape daemons.

/// The value of the first sample of `name` whose line holds every one of `labels`; 0 if none.
pub fn sample(text: &str, name: &str, labels: &[&str]) -> u64 {
    text.lines()
        .filter(|l| l.starts_with(name) && l[name.len()..].starts_with('{'))
        .find(|l| labels.iter().all(|x| l.contains(x)))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0)
}

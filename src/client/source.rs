//! Not built yet.

/// Placeholder until the real parser lands.
pub fn parse_sources(text: &str) -> Result<Vec<std::net::IpAddr>, String> {
    text.split(',')
        .map(|s| s.trim().parse().map_err(|_| format!("bad address '{s}'")))
        .collect()
}

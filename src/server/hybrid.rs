//! `hybrid`: not built yet.

use std::net::TcpListener;

use super::{Context, Model};

pub struct Hybrid;

impl Model for Hybrid {
    fn name(&self) -> &'static str {
        "hybrid"
    }
    fn about(&self) -> &'static str {
        "not built yet"
    }
    fn probe(&self, _config: &super::Config) -> Result<(), String> {
        Err("not built yet".into())
    }
    fn serve(&self, _listener: TcpListener, _ctx: &Context) -> anyhow::Result<()> {
        anyhow::bail!("not built yet")
    }
}

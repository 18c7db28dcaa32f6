//! The machine's unloaded round trip: one 64-byte message echoed over a
//! loopback TCP connection, one at a time, between a thread on the
//! server's CPUs and one on the client's — the least latency any server
//! on this machine could answer in. `c10k run --slo` refuses a target
//! below it. Cost: about 0.1 s (2,000 round trips and a connection).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// Round trips measured.
const TRIPS: usize = 2000;

/// The round trips' times, seconds, sorted, of `trips` echoes between a
/// thread pinned to `server_cpus` and one pinned to `client_cpus` (empty:
/// unpinned).
pub fn measure(server_cpus: &[usize], client_cpus: &[usize]) -> std::io::Result<Vec<f64>> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let server_cpus = server_cpus.to_vec();
    let client_cpus = client_cpus.to_vec();
    std::thread::scope(|scope| {
        let echo = scope.spawn(move || -> std::io::Result<()> {
            if !server_cpus.is_empty() {
                crate::sys::affinity::pin_current(&server_cpus)?;
            }
            let (mut s, _) = listener.accept()?;
            s.set_nodelay(true)?;
            s.set_read_timeout(Some(Duration::from_secs(5)))?;
            let mut buf = [0u8; 64];
            for _ in 0..TRIPS {
                s.read_exact(&mut buf)?;
                s.write_all(&buf)?;
            }
            Ok(())
        });
        let client = scope.spawn(move || -> std::io::Result<Vec<f64>> {
            // Connected first, so the echo's accept returns whatever
            // happens next.
            let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
            if !client_cpus.is_empty() {
                crate::sys::affinity::pin_current(&client_cpus)?;
            }
            s.set_nodelay(true)?;
            s.set_read_timeout(Some(Duration::from_secs(5)))?;
            let mut buf = [7u8; 64];
            let mut times = Vec::with_capacity(TRIPS);
            for _ in 0..TRIPS {
                let t = Instant::now();
                s.write_all(&buf)?;
                s.read_exact(&mut buf)?;
                times.push(t.elapsed().as_secs_f64());
            }
            times.sort_by(f64::total_cmp);
            Ok(times)
        });
        let times = client
            .join()
            .map_err(|_| std::io::Error::other("the round-trip client panicked"))?;
        echo.join()
            .map_err(|_| std::io::Error::other("the round-trip echo panicked"))??;
        times
    })
}

/// The `q` quantile (0.99) of sorted `times`.
pub fn quantile(times: &[f64], q: f64) -> f64 {
    crate::stats::quantile(times, q)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_loopback_round_trip_is_measured_and_positive() {
        let t = super::measure(&[], &[]).expect("loopback");
        assert_eq!(t.len(), super::TRIPS);
        assert!(t[0] > 0.0 && t.windows(2).all(|w| w[0] <= w[1]));
        assert!(super::quantile(&t, 0.99) >= super::quantile(&t, 0.5));
    }
}

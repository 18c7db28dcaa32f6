//! The queueing bound of a server: `c` handlers, each taking `S` seconds
//! per request, offered requests at random (Poisson) at `λ` a second — an
//! M/G/c queue, M/D/c for the fixed work of `c10k serve --work`. Its
//! capacity is c/S; below it, how long a request waits for a handler
//! grows with the load, and a latency target caps the load a model can
//! carry within it (the figure ZygOS, Shenango and Caladan report, and
//! issue 43's bound beside each model's curve).
//!
//! The probability that a request waits is Erlang's C formula (exact for
//! any service time when c = 1, and for exponential service at any c),
//! from the Erlang B recursion, stable at thousands of handlers. The mean
//! wait is the Allen–Cunneen approximation, the M/M/c mean scaled by
//! (1 + cv²)/2 for a service time of squared coefficient of variation cv²
//! (0 fixed, 1 exponential): exact for M/M/c and for M/G/1
//! (Pollaczek–Khinchine). The wait's tail is taken as exponential past 0,
//! P(W > t) = C · exp(−t · C / E[W]): exact for M/M/c; for fixed service
//! the true tail falls faster (at half load on one handler, by a quarter),
//! so the quantile errs high there, and the error vanishes as the load
//! nears capacity, where targets are met or missed. A response quantile is
//! the service time plus the wait's quantile: exact for fixed service,
//! for random service an approximation that errs high.
//!
//! Cost: O(c) per evaluation; [`Queue::highest_rate_within`] bisects 100
//! times.

/// A server seen as a queue.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Queue {
    /// Handlers serving at once (threads, processes, loops, a pool).
    pub handlers: usize,
    /// Seconds a handler spends per request.
    pub service: f64,
    /// Squared coefficient of variation of the service time: 0 for a
    /// fixed time, 1 for an exponential one.
    pub cv2: f64,
}

impl Queue {
    /// Requests a second the handlers can serve at most: c / S.
    pub fn capacity(&self) -> f64 {
        self.handlers as f64 / self.service
    }

    /// The share of the capacity `rate` offers (ρ = λS/c).
    pub fn utilisation(&self, rate: f64) -> f64 {
        rate / self.capacity()
    }

    /// The probability a request offered at `rate` waits for a handler
    /// (Erlang C); `None` at or past capacity, where the queue grows
    /// without end.
    pub fn wait_probability(&self, rate: f64) -> Option<f64> {
        let c = self.handlers.max(1) as f64;
        let a = rate * self.service;
        if !(rate >= 0.0 && a < c) {
            return None;
        }
        // Erlang B by its recursion, then C from B.
        let mut b = 1.0;
        for k in 1..=self.handlers.max(1) {
            b = a * b / (k as f64 + a * b);
        }
        Some(c * b / (c - a * (1.0 - b)))
    }

    /// The mean wait for a handler, seconds (Allen–Cunneen); `None` at or
    /// past capacity.
    pub fn mean_wait(&self, rate: f64) -> Option<f64> {
        let p = self.wait_probability(rate)?;
        let spare = self.capacity() - rate;
        Some(p / spare * (1.0 + self.cv2) / 2.0)
    }

    /// The `q` quantile (0.99: p99) of the response time, seconds: the
    /// service time plus the wait's quantile; `None` at or past capacity.
    pub fn response_quantile(&self, rate: f64, q: f64) -> Option<f64> {
        let p = self.wait_probability(rate)?;
        let mean = self.mean_wait(rate)?;
        let tail = 1.0 - q.clamp(0.0, 1.0 - 1e-12);
        let wait = if p <= tail || mean <= 0.0 {
            0.0
        } else {
            // P(W > t) = p·exp(−t·p/mean) = tail.
            mean / p * (p / tail).ln()
        };
        Some(self.service + wait)
    }

    /// The highest rate whose `q` quantile of the response time is within
    /// `target` seconds; `None` when even an idle server misses it (the
    /// service time alone is longer).
    pub fn highest_rate_within(&self, q: f64, target: f64) -> Option<f64> {
        if self.service > target {
            return None;
        }
        let within = |rate: f64| self.response_quantile(rate, q).is_some_and(|t| t <= target);
        let (mut lo, mut hi) = (0.0, self.capacity());
        for _ in 0..100 {
            let mid = (lo + hi) / 2.0;
            if within(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Some(lo)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXED_1MS: Queue = Queue {
        handlers: 1,
        service: 1e-3,
        cv2: 0.0,
    };

    #[test]
    fn one_handler_blocking_1ms_carries_1000_a_second() {
        assert!((FIXED_1MS.capacity() - 1000.0).abs() < 1e-9);
        assert!((FIXED_1MS.utilisation(500.0) - 0.5).abs() < 1e-12);
        assert_eq!(FIXED_1MS.wait_probability(1000.0), None);
        assert_eq!(FIXED_1MS.mean_wait(1500.0), None);
    }

    #[test]
    fn erlang_c_and_the_means_are_the_textbooks() {
        // One handler: a request waits with probability ρ.
        let p = FIXED_1MS.wait_probability(500.0).unwrap();
        assert!((p - 0.5).abs() < 1e-12, "{p}");
        // C(2 handlers, 1 erlang) = 1/3.
        let two = Queue {
            handlers: 2,
            service: 1.0,
            cv2: 1.0,
        };
        assert!((two.wait_probability(1.0).unwrap() - 1.0 / 3.0).abs() < 1e-12);
        // M/M/2 at 1 erlang: E[W] = C/(cμ − λ) = (1/3)/1.
        assert!((two.mean_wait(1.0).unwrap() - 1.0 / 3.0).abs() < 1e-12);
        // M/D/1 at half load: Pollaczek–Khinchine, ρS / (2(1 − ρ)) = 0.5 ms.
        assert!((FIXED_1MS.mean_wait(500.0).unwrap() - 0.5e-3).abs() < 1e-12);
        // Thousands of handlers stay finite and below 1.
        let many = Queue {
            handlers: 5000,
            service: 1e-3,
            cv2: 0.0,
        };
        let p = many.wait_probability(4.9e6).unwrap();
        assert!(p.is_finite() && (0.0..1.0).contains(&p), "{p}");
    }

    #[test]
    fn a_quantile_grows_with_load_and_a_target_caps_it() {
        // M/M/1: the wait is exactly ρ·exp(−(μ − λ)t); its p99 at half
        // load is ln(50)/(μ − λ) = 7.82 ms, plus the 1 ms served.
        let mm1 = Queue {
            cv2: 1.0,
            ..FIXED_1MS
        };
        let t = mm1.response_quantile(500.0, 0.99).unwrap();
        assert!((t - (1e-3 + 50f64.ln() / 500.0)).abs() < 1e-9, "{t}");
        // Fixed work waits half as long on average: less at every load.
        let mut last = 0.0;
        for rate in [100.0, 300.0, 500.0, 700.0, 900.0, 990.0] {
            let d = FIXED_1MS.response_quantile(rate, 0.99).unwrap();
            assert!(d > last && d < mm1.response_quantile(rate, 0.99).unwrap());
            last = d;
        }
        // A light load waits less than 1 % of the time: p99 is the work.
        assert_eq!(FIXED_1MS.response_quantile(5.0, 0.99), Some(1e-3));
        // Within a 5 ms p99: below capacity, and the quantile there is
        // the target.
        let r = FIXED_1MS.highest_rate_within(0.99, 5e-3).unwrap();
        assert!(r > 0.0 && r < 1000.0, "{r}");
        let at = FIXED_1MS.response_quantile(r, 0.99).unwrap();
        assert!((at - 5e-3).abs() < 1e-9, "{at}");
        // A target below the work itself is never met.
        assert_eq!(FIXED_1MS.highest_rate_within(0.99, 0.5e-3), None);
        // More handlers carry more within the same target.
        let four = Queue {
            handlers: 4,
            ..FIXED_1MS
        };
        assert!(four.highest_rate_within(0.99, 5e-3).unwrap() > 3.0 * r);
    }
}

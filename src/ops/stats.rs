//! Summary statistics shared by the session metrics and their analysis:
//! nearest-rank percentiles, so every figure is a value that was observed.

use serde::{Deserialize, Serialize};

/// The spread of a set of samples: min, max, median, p95.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
    pub count: usize,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub median: f64,
    pub p95: f64,
}

impl Distribution {
    /// All zero for no samples (a session that read nothing).
    pub fn of(samples: &[f64]) -> Distribution {
        let mut sorted: Vec<f64> = samples.iter().copied().filter(|s| s.is_finite()).collect();
        if sorted.is_empty() {
            return Distribution::default();
        }
        sorted.sort_by(f64::total_cmp);
        Distribution {
            count: sorted.len(),
            min: sorted[0],
            max: sorted[sorted.len() - 1],
            mean: sorted.iter().sum::<f64>() / sorted.len() as f64,
            median: percentile(&sorted, 50.0),
            p95: percentile(&sorted, 95.0),
        }
    }
}

/// The nearest-rank `p`th percentile of `sorted` (ascending, not empty).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let samples: Vec<f64> = (1..=20).map(f64::from).collect();
        let d = Distribution::of(&samples);
        assert_eq!((d.min, d.max, d.median, d.p95), (1.0, 20.0, 10.0, 19.0));
        assert_eq!(d.mean, 10.5);
        assert_eq!(Distribution::of(&[]), Distribution::default());
    }
}

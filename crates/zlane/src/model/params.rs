//! The parameters of the §5 model and their validation.

use std::fmt;

use thiserror::Error;

/// A parameter of the model, displayed with the paper's symbol (and the key of `aviary lab
/// zlane-model --json`), so that an error names it as the paper and the report do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    /// `C`: egress capacity of every on-path interface.
    Capacity,
    /// `mu_A`: lower bound of queue A (authenticated best effort) as a share of `C`.
    ShareAuthenticated,
    /// `mu_G`: bound of queue G (guaranteed) as a share of `C`.
    ShareGuaranteed,
    /// `T`: traffic of the source's ISD without the source AS, at routers outside that ISD.
    IsdOtherTraffic,
    /// `r_S`: the source AS's guaranteed rate at routers inside its ISD.
    SourceAsRate,
    /// `r_I`: the source ISD's guaranteed rate at routers outside it.
    SourceIsdRate,
    /// `D`: attack traffic at every on-path interface.
    Attack,
    /// `j`: how many of the first on-path routers are inside the source's ISD.
    RoutersInSourceIsd,
    /// `n_routers`: the on-path routers (`ℓ` in the paper).
    Routers,
    /// `F`: the source AS's sending rate.
    OfferedRate,
}

impl fmt::Display for Param {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Param::Capacity => "C",
            Param::ShareAuthenticated => "mu_A",
            Param::ShareGuaranteed => "mu_G",
            Param::IsdOtherTraffic => "T",
            Param::SourceAsRate => "r_S",
            Param::SourceIsdRate => "r_I",
            Param::Attack => "D",
            Param::RoutersInSourceIsd => "j",
            Param::Routers => "n_routers",
            Param::OfferedRate => "F",
        })
    }
}

/// A parameter set the model cannot evaluate.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum ParamError {
    #[error("{param} must be a finite number >= 0, got {value}")]
    NotFiniteOrNegative { param: Param, value: f64 },
    #[error("{param} must be > 0")]
    NotPositive { param: Param },
    #[error("mu_A + mu_G must not exceed 1 (Table 2: the queues' shares sum to at most 100 %), got {sum}")]
    SharesAboveLink { sum: f64 },
    #[error("{param} = {rate} Gbit/s exceeds queue G's capacity C * mu_G = {queue} Gbit/s")]
    RateAboveGuaranteedQueue { param: Param, rate: f64, queue: f64 },
    #[error("j = {j} exceeds the path's n_routers = {routers}")]
    SourceIsdRoutersBeyondPath { j: usize, routers: usize },
}

/// Rates in Gbit/s, shares as fractions of `C`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    pub capacity_gbps: f64,
    pub share_authenticated: f64,
    pub share_guaranteed: f64,
    pub isd_other_traffic_gbps: f64,
    pub source_as_rate_gbps: f64,
    pub source_isd_rate_gbps: f64,
    pub attack_gbps: f64,
    pub routers_in_source_isd: usize,
    pub routers: usize,
}

/// The default `j`: the first half of the eight routers. A SCION path is an up-segment in the
/// source's ISD, a core segment and a down-segment in the destination's ISD; with up- and
/// down-segments of equal length the source's ISD holds half of the path (docs/zlane.md).
pub const DEFAULT_ROUTERS_IN_SOURCE_ISD: usize = 4;

/// The source rates `F` of Fig. 4, in Gbit/s.
pub const FIG4_OFFERED_RATES_GBPS: [f64; 4] = [0.5, 1.0, 1.5, 2.0];

impl Params {
    /// The instance of Fig. 4 (§5.3 "Results" and Table 2) with `j` routers inside the source's
    /// ISD, which the paper does not state.
    pub const fn fig4(routers_in_source_isd: usize) -> Self {
        Self {
            capacity_gbps: 40.0,
            share_authenticated: 0.15,
            share_guaranteed: 0.20,
            isd_other_traffic_gbps: 3.0,
            source_as_rate_gbps: 1.0,
            source_isd_rate_gbps: 4.0,
            attack_gbps: 40.0,
            routers_in_source_isd,
            routers: 8,
        }
    }

    pub(super) fn validate(&self) -> Result<(), ParamError> {
        let rates = [
            (Param::Capacity, self.capacity_gbps),
            (Param::ShareAuthenticated, self.share_authenticated),
            (Param::ShareGuaranteed, self.share_guaranteed),
            (Param::IsdOtherTraffic, self.isd_other_traffic_gbps),
            (Param::SourceAsRate, self.source_as_rate_gbps),
            (Param::SourceIsdRate, self.source_isd_rate_gbps),
            (Param::Attack, self.attack_gbps),
        ];
        for (param, value) in rates {
            check_rate(param, value)?;
        }
        if self.capacity_gbps == 0.0 {
            return Err(ParamError::NotPositive { param: Param::Capacity });
        }
        let sum = self.share_authenticated + self.share_guaranteed;
        if sum > 1.0 {
            return Err(ParamError::SharesAboveLink { sum });
        }
        // The scenario has every other origin fill the rest of G (§5.3), which needs room for it.
        let queue = self.capacity_gbps * self.share_guaranteed;
        for (param, rate) in
            [(Param::SourceAsRate, self.source_as_rate_gbps), (Param::SourceIsdRate, self.source_isd_rate_gbps)]
        {
            if rate > queue {
                return Err(ParamError::RateAboveGuaranteedQueue { param, rate, queue });
            }
        }
        if self.routers == 0 {
            return Err(ParamError::NotPositive { param: Param::Routers });
        }
        if self.routers_in_source_isd > self.routers {
            return Err(ParamError::SourceIsdRoutersBeyondPath {
                j: self.routers_in_source_isd,
                routers: self.routers,
            });
        }
        Ok(())
    }
}

/// Rates and shares are finite and non-negative.
pub(super) fn check_rate(param: Param, value: f64) -> Result<(), ParamError> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(ParamError::NotFiniteOrNegative { param, value })
    }
}

use thiserror::Error;

/// Why a statistic could not be computed. Every variant names the offending input so that a
/// caller can report it without re-checking the data.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum StatsError {
    #[error("no values were given")]
    Empty,
    #[error("{what} holds a non-finite value ({value}) at position {index}")]
    NonFinite { what: &'static str, index: usize, value: f64 },
    #[error("{what}: lengths differ ({left} vs {right})")]
    LengthMismatch { what: &'static str, left: usize, right: usize },
    #[error("{what} needs at least {needed} values, got {got}")]
    TooFewValues { what: &'static str, needed: usize, got: usize },
    #[error("{what}: all values are equal, so there is no variance to work with")]
    ZeroVariance { what: &'static str },
    #[error("unknown factor {0:?}")]
    UnknownFactor(String),
    #[error("factor {0:?} is listed more than once")]
    DuplicateFactor(String),
    #[error("factor name {0:?} is not usable: names must be non-empty and must not contain ':'")]
    InvalidFactorName(String),
    #[error(
        "the data set has more than {max} distinct level combinations (cells); \
         a factorial analysis of that many cells is not supported"
    )]
    TooManyCells { max: usize },
    #[error("the data set has no factors")]
    NoFactors,
    #[error("row {row} has {got} levels but the data set has {expected} factors")]
    RaggedRow { row: usize, expected: usize, got: usize },
    #[error("the model has no main effects")]
    NoMainEffects,
    #[error("interaction {term:?} needs at least two distinct factors")]
    InvalidInteraction { term: String },
    #[error("interaction {term:?} uses factor {factor:?}, which is not a main effect of the model")]
    InteractionOutsideModel { term: String, factor: String },
    #[error("term {0:?} appears more than once in the model")]
    DuplicateTerm(String),
    #[error("the log response needs positive values, but row {row} holds {value}")]
    NonPositiveForLog { row: usize, value: f64 },
    #[error(
        "the model uses all {observations} observations to fit its {rank} free parameters: \
         no residual degrees of freedom are left to test against"
    )]
    NoResidualDegreesOfFreedom { observations: usize, rank: usize },
    #[error("the model fits every observation exactly: no residual variance to test against")]
    PerfectFit,
    #[error("{what} needs at least {needed} groups, got {got}")]
    TooFewGroups { what: &'static str, needed: usize, got: usize },
    #[error("group {group} has {size} values; each group needs at least 2 to have a spread")]
    GroupTooSmall { group: String, size: usize },
    #[error("the table has {table} residuals but the data set has {data} rows: not the same data")]
    ResidualsDoNotMatchData { table: usize, data: usize },
    #[error("significance level {0} is not inside (0, 1)")]
    InvalidAlpha(f64),
    #[error("distribution parameters rejected: {0}")]
    Distribution(String),
}

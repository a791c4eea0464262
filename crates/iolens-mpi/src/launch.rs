//! Was this process started by an MPI launcher? Read from the environment the launchers set.

/// What the environment says about an MPI launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// Processes in the job, when the launcher tells.
    pub size: Option<usize>,
    /// This process's rank, when the launcher tells.
    pub rank: Option<usize>,
    /// The variable that revealed the launch, for messages.
    pub variable: &'static str,
}

/// (size, rank) variables of the launchers: Open MPI, MPICH/Hydra and Intel MPI (PMI),
/// MVAPICH2, and PMIx (rank only).
const VARIABLES: [(&str, &str); 4] = [
    ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"),
    ("PMI_SIZE", "PMI_RANK"),
    ("MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_RANK"),
    ("PMIX_SIZE", "PMIX_RANK"),
];

impl Launch {
    /// How this process was started, for messages: "started by an MPI launcher as rank R of N
    /// (VAR=N)".
    pub fn describe(&self) -> String {
        match (self.size, self.rank) {
            (Some(n), Some(r)) => {
                format!("started by an MPI launcher as rank {r} of {n} ({}={n})", self.variable)
            }
            (_, Some(r)) => format!("started by an MPI launcher as rank {r} ({} is set)", self.variable),
            _ => format!("started by an MPI launcher ({} is set)", self.variable),
        }
    }

    /// Ranks sharing this node (Open MPI, MPICH/Hydra, MVAPICH2), when the launcher tells.
    pub fn local_ranks() -> Option<u64> {
        ["OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "MV2_COMM_WORLD_LOCAL_SIZE"]
            .iter()
            .find_map(|k| std::env::var(k).ok()?.trim().parse::<u64>().ok())
    }

    /// More than one process: without MPI, they would all run the same job on the same files.
    pub fn many(&self) -> bool {
        self.size.is_some_and(|s| s > 1) || self.rank.is_some_and(|r| r > 0)
    }
}

/// The launch this process's environment describes, if any.
pub fn detect() -> Option<Launch> {
    detect_with(|k| std::env::var(k).ok())
}

/// [`detect`] over any variable lookup (for tests).
pub fn detect_with(get: impl Fn(&str) -> Option<String>) -> Option<Launch> {
    let num = |k: &str| get(k).and_then(|v| v.trim().parse::<usize>().ok());
    VARIABLES.iter().find_map(|&(size_var, rank_var)| {
        let (size, rank) = (num(size_var), num(rank_var));
        if size.is_none() && rank.is_none() {
            return None;
        }
        let variable = if size.is_some() { size_var } else { rank_var };
        Some(Launch { size, rank, variable })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> =
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn open_mpi_mpich_and_pmix_launches_are_recognized() {
        let l = detect_with(env(&[("OMPI_COMM_WORLD_SIZE", "4"), ("OMPI_COMM_WORLD_RANK", "2")])).unwrap();
        assert_eq!((l.size, l.rank, l.many()), (Some(4), Some(2), true));
        let l = detect_with(env(&[("PMI_SIZE", "2"), ("PMI_RANK", "0")])).unwrap();
        assert_eq!((l.variable, l.many()), ("PMI_SIZE", true));
        let l = detect_with(env(&[("PMIX_RANK", "3")])).unwrap();
        assert_eq!((l.size, l.rank, l.variable, l.many()), (None, Some(3), "PMIX_RANK", true));
    }

    #[test]
    fn a_single_process_or_no_launcher_is_not_many() {
        assert!(!detect_with(env(&[("OMPI_COMM_WORLD_SIZE", "1"), ("OMPI_COMM_WORLD_RANK", "0")]))
            .unwrap()
            .many());
        assert!(!detect_with(env(&[("PMIX_RANK", "0")])).unwrap().many());
        assert_eq!(detect_with(env(&[("HOME", "/root")])), None);
    }
}

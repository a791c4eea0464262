//! The integration tests of `iolens-stats`, in one test binary: ANOVA and its companions
//! against statsmodels/scipy references (`anova_reference`), plain samples against scipy
//! (`sample_reference`), and properties on hand-made data (`hand_made`); `util` reads the
//! reference fixtures in `tests/fixtures/`.

mod util;

mod anova_reference;
mod hand_made;
mod sample_reference;

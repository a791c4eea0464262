//! `iolens completions SHELL` and `iolens man [COMMAND]`: shell completion scripts and the manual
//! pages (iolens(1), and iolens-COMMAND(1) for each command), all generated from the same
//! argument definitions as `--help`, so they cannot drift.

use std::path::Path;

use clap::CommandFactory;

use crate::cli::{Cli, ManArgs};
use crate::output::{check_write, EXIT_FAILED, EXIT_USAGE};

pub fn completions(shell: clap_complete::Shell) -> Result<(), u8> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "iolens", &mut script);
    say!("{}", String::from_utf8_lossy(&script));
    Ok(())
}

pub fn man(a: ManArgs) -> Result<(), u8> {
    if let Some(dir) = &a.all {
        return all_pages(dir);
    }
    let page = match &a.command {
        None => page_of(Cli::command())?,
        Some(name) => page_of(command_page(name)?)?,
    };
    say!("{page}");
    Ok(())
}

/// The command `name` as a page of its own, `iolens-NAME`, as git names its pages.
fn command_page(name: &str) -> Result<clap::Command, u8> {
    let cli = Cli::command();
    let Some(command) = cli.find_subcommand(name) else {
        let names: Vec<&str> = cli.get_subcommands().map(|c| c.get_name()).collect();
        let near =
            iolens_workload::suggest(name, &names).map(|n| format!("did you mean {n}? ")).unwrap_or_default();
        errln!(
            "iolens: error: man: no command {name:?}\n  hint: {near}the commands are {}",
            names.join(", ")
        );
        return Err(EXIT_USAGE);
    };
    Ok(command.clone().name(format!("iolens-{name}")).bin_name(format!("iolens {name}")))
}

fn page_of(command: clap::Command) -> Result<String, u8> {
    let mut page = Vec::new();
    clap_mangen::Man::new(command).render(&mut page).map_err(|e| {
        errln!("iolens: error: cannot render the manual page: {e}");
        EXIT_FAILED
    })?;
    Ok(String::from_utf8_lossy(&page).into_owned())
}

/// iolens.1 and iolens-COMMAND.1 for every command, written into `dir` as result files are.
fn all_pages(dir: &Path) -> Result<(), u8> {
    if !dir.is_dir() {
        errln!("iolens: error: man --all {}: not a directory\n  hint: create it first", dir.display());
        return Err(EXIT_USAGE);
    }
    let cli = Cli::command();
    let mut pages = vec![("iolens.1".to_string(), page_of(cli.clone())?)];
    for name in cli.get_subcommands().map(|c| c.get_name().to_string()).filter(|n| n != "help") {
        pages.push((format!("iolens-{name}.1"), page_of(command_page(&name)?)?));
    }
    for (file, page) in &pages {
        let path = dir.join(file);
        check_write(&path, iolens_report::write_output(&path, |w| w.write_all(page.as_bytes())));
    }
    sayln!("{} manual pages in {}", pages.len(), dir.display());
    Ok(())
}

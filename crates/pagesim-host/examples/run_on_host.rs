//! Runs a scenario on this host (root) and prints the measurements as JSON, until
//! `pagesim validate` exists:
//!
//! ```text
//! cargo build -p pagesim-host && sudo target/debug/examples/run_on_host scenarios/memcg-random.toml [REPEATS]
//! ```

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: run_on_host SCENARIO [REPEATS]");
        std::process::exit(2);
    };
    let repeats = args.get(1).map_or(Ok(1), |r| r.parse()).unwrap_or_else(|_| {
        eprintln!("REPEATS must be a positive integer");
        std::process::exit(2);
    });
    // Interrupted runs clean up before dying of the signal; say what could not be undone.
    pagesim_host::cleanup::set_signal_report(|errors| {
        for e in errors {
            eprintln!("run_on_host: cleanup: {e}");
        }
    });
    let result = pagesim::Scenario::load_file(std::path::Path::new(path), &[])
        .and_then(|sc| pagesim_host::run_on_host(&sc, repeats));
    match result {
        Ok(runs) => println!("{}", serde_json::to_string_pretty(&runs).expect("serializes")),
        Err(e) => {
            eprintln!("run_on_host: {e}");
            std::process::exit(1);
        }
    }
}

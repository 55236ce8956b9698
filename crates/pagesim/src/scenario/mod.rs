//! (being written) Scenario files.
pub mod units;
use crate::Error;
#[derive(Debug, Clone)]
pub struct Scenario;
impl Scenario {
    pub fn load_file(_p: &std::path::Path, _sets: &[String]) -> Result<Self, Error> {
        Ok(Scenario)
    }
    pub fn from_toml(_t: &str, _o: &str, _sets: &[String]) -> Result<Self, Error> {
        Ok(Scenario)
    }
    pub fn from_json(_v: &serde_json::Value, _o: &str, _sets: &[String]) -> Result<Self, Error> {
        Ok(Scenario)
    }
}

//! (being written) Reports.
#[derive(Debug, Clone)]
pub struct Report {
    pub json: serde_json::Value,
}
impl Report {
    pub fn to_json(&self) -> serde_json::Value {
        self.json.clone()
    }
}

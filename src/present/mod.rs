//! What a run shows and keeps: the report's tables (`report`, drawn with `table`), a
//! comparison's tables and page (`compare`), the files a
//! run writes (`export`: JSON, text, Markdown, CSV, SVG, HTML) and the results directory they
//! go into and `compare` reads back (`results`), and the run's events as they come (`live`,
//! the listener the command line installs).

pub mod compare;
pub mod export;
pub mod live;
pub mod report;
pub mod results;
pub mod table;

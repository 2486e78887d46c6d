#pragma once
// The report as CSV (RFC 4180: fields holding a comma, a double quote, CR or LF are quoted and
// their quotes doubled; records end in CRLF). Values are raw numbers in their SI unit (seconds,
// bytes, US dollars, fractions), printed as the shortest text that reads back exactly; an empty
// cell is an empty field. A column with any band gets two more columns, KEY_low and KEY_high.
//
// render_table_csv: one table, one header record, one record per row.
// render_csv: the whole report as a sectioned CSV, sections separated by one empty line, each
//   opening with the record `#section,ID,TITLE` followed by an RFC 4180 table:
//     #section,summary,Summary        key,label,value,low,high,unit,detail
//     #section,TABLE_ID,TITLE         one per table, in report order (as render_table_csv)
//     #section,assumptions,Assumptions  group,name,value,source,date,region
//   Charts are not written: their data are the tables' (or the JSON's). To split, read records
//   up to each empty line; to get plain per-table files, use write_csv_tables.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "reports/report_model.hpp"

namespace clustersim::reports {

std::string csv_field(std::string_view text);
std::string render_table_csv(const Table& table);
// Throws std::invalid_argument when the report is malformed (check_report).
std::string render_csv(const Report& report);
// Writes one file per table, DIRECTORY/STEM-TABLE_ID.csv, atomically; returns the paths written.
std::vector<std::filesystem::path> write_csv_tables(const std::filesystem::path& directory, std::string_view stem,
                                                    const Report& report);

}  // namespace clustersim::reports

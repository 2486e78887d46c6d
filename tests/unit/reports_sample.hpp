#pragma once
// Sample reports for the reports/ tests. Every number, name and price here is invented for the
// tests (a fictional "demo.8gpu" instance); none is a hardware or price fact.

#include "reports/report_model.hpp"

namespace clustersim::testing {

// A capacity plan with the four charts the planner draws (step time against GPU count, the
// cost/time frontier, the step-time breakdown, memory per rank), a candidates table with bands,
// notes and assumptions.
reports::Report sample_capacity_report();
// A single-simulation report: summary, one breakdown chart, one table, no frontier.
reports::Report sample_simulation_report();

}  // namespace clustersim::testing

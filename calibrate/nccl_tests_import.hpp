#pragma once
// Reads nccl-tests output as users have it and turns it into calibration results ("collectives").
//
// Accepted: the table of any *_perf binary of the seven collectives (all_reduce, all_gather,
// reduce_scatter, broadcast, reduce, alltoall, sendrecv), current and older column layouts (with
// or without the "root" column, "#wrong" or "error", -C cputime, -I per-iteration columns), the
// "#  Rank ..." device lines (which give the rank count, the hosts and the GPU model), NCCL_DEBUG=INFO
// lines interleaved with the table (also in the middle of a row, as stdout and stderr mix), tables
// repeated by -N run cycles, several tests in one log, logs pasted without the leading '#'.
//
// From each table row come two points: out-of-place (in_place false) and in-place (in_place true).
// The op comes from "# Collective test starting: <binary>" or a *_perf binary name in the log,
// else --op. The rank count from the device lines, else from size/count for the gathering ops,
// else --nranks. Nodes from the distinct host names of the device lines. Algorithm, protocol and
// channel count from "NCCL_ALGO / NCCL_PROTO / NCCL_MIN_NCHANNELS ... set by environment" INFO
// lines, else --algo/--proto, else "auto".
//
// Every row is checked against nccl-tests' bus-bandwidth factor for the op and rank count
// (busbw = algbw * factor, results.hpp): a mismatch means a wrong op or rank count and is an error.
// Errors are InputErrors naming the file and the line.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "calibrate/results.hpp"

namespace clustersim::calibrate {

struct NcclTestsImportOptions {
  std::optional<std::string> op{};     // when the log does not say
  std::optional<std::string> algo{};   // when the log does not say
  std::optional<std::string> proto{};  // when the log does not say
  std::optional<int> nranks{};         // when the log does not say
  std::optional<int> gpus_per_node{};  // when the log has no host names
};

// Logs as (file name for messages, text).
CalibrationResults import_nccl_tests_text(const std::vector<std::pair<std::string, std::string>>& logs,
                                          const NcclTestsImportOptions& options);
// Reads the files; a missing file is an InputError naming it.
CalibrationResults import_nccl_tests_logs(const std::vector<std::string>& paths, const NcclTestsImportOptions& options);

// "all_reduce_perf" -> "all_reduce"; nullopt for binaries that are not one of the seven collectives.
std::optional<std::string> op_from_binary(const std::string& binary);

}  // namespace clustersim::calibrate

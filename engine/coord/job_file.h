// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "engine/coord/assignment.h"

namespace rookery::coord {

/// An operator's job: what a swarm trains, read from a JSON file (docs/job-file.md): the
/// model as a list of layers, the optimizer, the batch, steps and seed, the averaging
/// settings and the dataset by name and content hash.
struct Job
{
    std::string name;          ///< the job's own name (shown to volunteers)
    RunConfig run;             ///< runId left empty: the coordinator names the run
    std::string datasetSha256; ///< the dataset's content hash (its manifest's); empty: not checked
};

/// Reads `text` (the contents of `source`, named in messages) as a job and validates all
/// of it before returning. Throws rookery::Error listing every problem found, one per
/// line: "FILE:LINE:COLUMN: ..." where the JSON does not parse, else "FILE: FIELD: ..."
/// naming the field (model.layers[2].out). Unknown fields are problems too, so that a
/// misspelt one is not silently ignored.
Job parseJob(std::string_view text, const std::string &source);

/// parseJob() of the file at `path`; throws rookery::Error when it cannot be read.
Job readJobFile(const std::filesystem::path &path);

/// The content hash of the Fashion-MNIST copy in `dir` (its four IDX files): the hash of
/// the manifest a coordinator serves it by (data::DatasetManifest), so it does not
/// depend on how the files are compressed. Throws rookery::Error naming a file that is
/// missing or damaged.
std::string datasetContentHash(const std::filesystem::path &dir);

} // namespace rookery::coord

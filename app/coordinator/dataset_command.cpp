// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/coordinator/dataset_command.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "engine/common/command_line.h"
#include "engine/common/error.h"
#include "engine/common/format.h"
#include "engine/common/paths.h"
#include "engine/coord/coordinator.h"
#include "engine/coord/dataset_library.h"
#include "engine/data/shard_store.h"

namespace rookery::app {
namespace fs = std::filesystem;
namespace {

// Nothing when the command should go on; else its exit status (--help: 0, a bad
// command line: 2, said on stderr).
std::optional<int> parseOrExit(CLI::App &p, int argc, const char *const *argv)
{
    try {
        if (cli::parse(p, argc, argv) == cli::Outcome::Run)
            return std::nullopt;
        return 0;
    } catch (const Error &e) {
        std::fprintf(stderr, "%s: %s\n", p.get_name().c_str(), e.what());
        return 2;
    }
}

int add(int argc, const char *const *argv)
{
    std::string dataDir = (defaultDataDir() / "coordinator").string(), name, idxDir, trainImages, trainLabels,
                testImages, testLabels;
    int64_t shardSamples = data::kDefaultShardSamples;
    CLI::App p("Adds a dataset in IDX format (the MNIST file format, .gz or plain) to this coordinator's\n"
               "store: cuts it into shards, names each by its SHA-256, and prints the dataset's content\n"
               "hash for a job file. Nodes without a copy fetch their shards from the coordinator.",
               "rookery-coordinator dataset add");
    cli::configure(p);
    p.add_option("name", name, "the dataset's name in job files (a-z, 0-9, '.', '_', '-')")->required();
    p.add_option("--data-dir", dataDir, "the coordinator's data directory")->type_name("DIR");
    p.add_option("--idx-dir", idxDir,
                 "a directory with the four files named as Fashion-MNIST's (train-images-idx3-ubyte.gz, ...)")
        ->type_name("DIR");
    p.add_option("--train-images", trainImages, "training images, IDX with 3 dimensions")->type_name("FILE");
    p.add_option("--train-labels", trainLabels, "training labels, IDX with 1 dimension")->type_name("FILE");
    p.add_option("--test-images", testImages, "test images")->type_name("FILE");
    p.add_option("--test-labels", testLabels, "test labels")->type_name("FILE");
    cli::addWholeNumber(p, "--shard-samples", shardSamples, 1, 1'000'000, "N", "samples per shard");
    p.footer("Example:\n"
             "  rookery-coordinator dataset add digits --idx-dir /srv/mnist --data-dir /var/lib/rookery\n"
             "then name it in the job file: \"dataset\": {\"name\": \"digits\", \"sha256\": \"<printed hash>\"}");
    if (const auto exit = parseOrExit(p, argc, argv))
        return *exit;
    if (!idxDir.empty()) {
        const fs::path d = idxDir;
        trainImages = trainImages.empty() ? (d / "train-images-idx3-ubyte.gz").string() : trainImages;
        trainLabels = trainLabels.empty() ? (d / "train-labels-idx1-ubyte.gz").string() : trainLabels;
        testImages = testImages.empty() ? (d / "t10k-images-idx3-ubyte.gz").string() : testImages;
        testLabels = testLabels.empty() ? (d / "t10k-labels-idx1-ubyte.gz").string() : testLabels;
    }
    if (trainImages.empty() || trainLabels.empty() || testImages.empty() || testLabels.empty()) {
        std::fprintf(stderr,
                     "%s: give --idx-dir, or all of --train-images, --train-labels, --test-images and "
                     "--test-labels\n",
                     p.get_name().c_str());
        return 2;
    }
    const auto began = std::chrono::steady_clock::now();
    std::fprintf(stderr, "reading %s and %s ...\n", trainImages.c_str(), testImages.c_str());
    const auto train = coord::readIdxPair(trainImages, trainLabels, name);
    const auto test = coord::readIdxPair(testImages, testLabels, name);
    if (test.rows != train.rows || test.cols != train.cols)
        throw Error("the test images are " + std::to_string(test.rows) + "x" + std::to_string(test.cols) +
                    " but the training images " + std::to_string(train.rows) + "x" + std::to_string(train.cols));
    const auto added = coord::addDataset(dataDir, name, train, test, shardSamples);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    std::fprintf(stderr,
                 "added %s: %lld training and %lld test samples of %dx%d, %d classes, in %zu + %zu shards (%s) to "
                 "%s in %.1f s\n",
                 name.c_str(), (long long)train.count, (long long)test.count, train.rows, train.cols,
                 added.manifest.classes, added.manifest.train.size(), added.manifest.test.size(),
                 format::bytes(double(added.bytes)).c_str(), coord::datasetStoreOf(dataDir).c_str(), seconds);
    std::printf("%s\n", added.sha256.c_str());
    return 0;
}

int list(int argc, const char *const *argv)
{
    std::string dataDir = (defaultDataDir() / "coordinator").string();
    CLI::App p("Lists the datasets in this coordinator's store.", "rookery-coordinator dataset list");
    cli::configure(p);
    p.add_option("--data-dir", dataDir, "the coordinator's data directory")->type_name("DIR");
    if (const auto exit = parseOrExit(p, argc, argv))
        return *exit;
    const fs::path names = coord::datasetStoreOf(dataDir) / "names";
    std::error_code ec;
    int shown = 0;
    data::ShardStore store(coord::datasetStoreOf(dataDir));
    for (const auto &e : fs::directory_iterator(names, ec)) {
        const std::string name = e.path().filename().string();
        const auto sha = coord::datasetNamed(dataDir, name);
        if (!sha)
            continue;
        const auto bytes = store.readVerified(*sha);
        if (!bytes) {
            std::printf("%s  %s  (manifest missing or damaged)\n", name.c_str(), sha->c_str());
            continue;
        }
        const auto m = data::parseManifest(*bytes);
        std::printf("%s  %s  %lld training samples of %dx%d in %zu shards, %s\n", name.c_str(), sha->c_str(),
                    (long long)m.trainSamples(), m.rows, m.cols, m.train.size(),
                    format::bytes(double(m.trainBytes())).c_str());
        ++shown;
    }
    if (shown == 0)
        std::fprintf(stderr, "no datasets in %s\n", coord::datasetStoreOf(dataDir).c_str());
    return 0;
}

} // namespace

int runDatasetCommand(const std::vector<std::string> &args)
{
    const std::string verb = args.size() > 1 ? args[1] : "";
    if (verb != "add" && verb != "list") {
        std::fprintf(stderr, "usage: rookery-coordinator dataset add NAME --idx-dir DIR [--data-dir DIR]\n"
                             "       rookery-coordinator dataset list [--data-dir DIR]\n");
        return 2;
    }
    std::vector<std::string> rest{args[0] + " dataset " + verb};
    rest.insert(rest.end(), args.begin() + 2, args.end());
    std::vector<const char *> argv;
    for (const auto &a : rest)
        argv.push_back(a.c_str());
    try {
        return verb == "add" ? add(int(argv.size()), argv.data()) : list(int(argv.size()), argv.data());
    } catch (const Error &e) {
        std::fprintf(stderr, "rookery-coordinator dataset %s: %s\n", verb.c_str(), e.what());
        return 1;
    }
}

} // namespace rookery::app

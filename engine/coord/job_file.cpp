// SPDX-License-Identifier: GPL-3.0-or-later
// The job file: JSON read field by field, every problem collected before any is
// reported, so that an operator fixes a file in one pass.
#include "engine/coord/job_file.h"
#include "engine/common/secret_token.h"

#include <array>
#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "engine/data/dataset_manifest.h"
#include "engine/model/model_zoo.h"
#include "engine/model/partitioner.h"

namespace rookery::coord {
namespace {

using nlohmann::json;

constexpr int kJobFormat = 1;

class Reader
{
public:
    explicit Reader(std::string source)
        : m_source(std::move(source))
    { }

    void problem(const std::string &field, const std::string &what)
    {
        m_problems.push_back(m_source + ": " + field + ": " + what);
    }
    const std::vector<std::string> &problems() const { return m_problems; }

    /// An object whose keys are all in `known`; else each stranger is a problem.
    bool object(const json &j, const std::string &field, std::initializer_list<std::string_view> known)
    {
        if (!j.is_object()) {
            problem(field, "must be an object ({...}), not " + std::string(j.type_name()));
            return false;
        }
        for (const auto &[key, value] : j.items()) {
            bool ok = false;
            for (auto k : known)
                ok = ok || key == k;
            if (!ok) {
                std::string list;
                for (auto k : known)
                    list += (list.empty() ? "" : ", ") + std::string(k);
                problem(join(field, key), "unknown field (known here: " + list + ")");
            }
        }
        return true;
    }

    /// `out` keeps its value (the default) when the field is absent and not `required`.
    template <class T>
    void integer(const json &j, const std::string &field, const char *key, T &out, int64_t min, int64_t max,
                 bool required = false)
    {
        const auto *v = find(j, field, key, required);
        if (!v)
            return;
        if (!v->is_number_integer() || (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(INT64_MAX)))
            return problem(join(field, key), "must be a whole number, not " + v->dump());
        const int64_t n = v->get<int64_t>();
        if (n < min || n > max)
            return problem(join(field, key), "must be from " + std::to_string(min) + " to " + std::to_string(max) +
                                                 ", not " + std::to_string(n));
        out = T(n);
    }

    void number(const json &j, const std::string &field, const char *key, double &out, double min, double max,
                bool required = false)
    {
        const auto *v = find(j, field, key, required);
        if (!v)
            return;
        if (!v->is_number())
            return problem(join(field, key), "must be a number, not " + v->dump());
        const double x = v->get<double>();
        if (!std::isfinite(x) || x < min || x > max) {
            std::ostringstream range;
            range << "must be from " << min << " to " << max << ", not " << x;
            return problem(join(field, key), range.str());
        }
        out = x;
    }

    void text(const json &j, const std::string &field, const char *key, std::string &out, size_t maxLength,
              bool required = false)
    {
        const auto *v = find(j, field, key, required);
        if (!v)
            return;
        if (!v->is_string())
            return problem(join(field, key), "must be a string, not " + v->dump());
        auto s = v->get<std::string>();
        if (s.empty() || s.size() > maxLength)
            return problem(join(field, key), "must be 1 to " + std::to_string(maxLength) + " characters long");
        out = std::move(s);
    }

    void boolean(const json &j, const std::string &field, const char *key, bool &out)
    {
        if (const auto *v = find(j, field, key, false)) {
            if (!v->is_boolean())
                return problem(join(field, key), "must be true or false, not " + v->dump());
            out = v->get<bool>();
        }
    }

    const json *find(const json &j, const std::string &field, const char *key, bool required)
    {
        const auto it = j.find(key);
        if (it == j.end()) {
            if (required)
                problem(join(field, key), "is missing");
            return nullptr;
        }
        return &*it;
    }

    static std::string join(const std::string &field, std::string_view key)
    {
        return field.empty() ? std::string(key) : field + "." + std::string(key);
    }

private:
    std::string m_source;
    std::vector<std::string> m_problems;
};

struct LayerType
{
    const char *name;
    model::LayerKind kind;
};
constexpr std::array<LayerType, 15> kLayerTypes{{{"flatten", model::LayerKind::Flatten},
                                                 {"linear", model::LayerKind::Linear},
                                                 {"relu", model::LayerKind::ReLU},
                                                 {"gelu", model::LayerKind::GELU},
                                                 {"tanh", model::LayerKind::Tanh},
                                                 {"conv2d", model::LayerKind::Conv2d},
                                                 {"maxpool2d", model::LayerKind::MaxPool2d},
                                                 {"avgpool2d", model::LayerKind::AvgPool2d},
                                                 {"layernorm", model::LayerKind::LayerNorm},
                                                 {"batchnorm", model::LayerKind::BatchNorm},
                                                 {"dropout", model::LayerKind::Dropout},
                                                 {"residual", model::LayerKind::Residual},
                                                 {"patchembed", model::LayerKind::PatchEmbed},
                                                 {"encoder", model::LayerKind::Encoder},
                                                 {"tokenmean", model::LayerKind::TokenMean}}};

// The most a job may expect of one cluster: the coordinator's largest --cluster-size,
// and volunteers of a well-equipped desktop's memory.
constexpr size_t kMostStages = 64;
constexpr uint64_t kMostVolunteerBytes = uint64_t(64) << 30;

// Why no cluster could ever hold `run`'s model (its weights, gradients, optimizer state
// and activations in flight, as the planner counts them), or empty when one could: it
// fits one such volunteer, or the most stages such volunteers can make of it.
std::string tooBigForAnyCluster(const RunConfig &run)
{
    const auto costs = model::layerCosts(run.model, run.microbatch);
    const auto options = model::partitionOptionsFor(run.model, run.microbatch, train::stateCopies(run.optimizer));
    const auto volunteers = [](size_t n) {
        return std::vector<model::StageDevice>(n, model::StageDevice{"a volunteer", 50, kMostVolunteerBytes});
    };
    if (model::tryPartitionLayers(costs, volunteers(1), options))
        return {};
    const size_t most = std::min(kMostStages, costs.size());
    try {
        (void)model::partitionLayers(costs, volunteers(most), options);
        return {};
    } catch (const Error &e) {
        return "too big for any cluster: cut into " + std::to_string(most) + " stages on volunteers of " +
               std::to_string(kMostVolunteerBytes >> 30) + " GiB each, it still does not fit (" + e.what() + ")";
    }
}

void readLayer(Reader &r, const json &j, const std::string &field, model::LayerSpec &layer)
{
    if (!j.is_object())
        return r.problem(field, "must be an object such as {\"type\": \"relu\"}, not " + j.dump());
    std::string type;
    r.text(j, field, "type", type, 32, true);
    if (type.empty())
        return;
    const LayerType *found = nullptr;
    for (const auto &t : kLayerTypes)
        if (type == t.name)
            found = &t;
    if (!found) {
        std::string known;
        for (const auto &t : kLayerTypes)
            known += (known.empty() ? "" : ", ") + std::string(t.name);
        return r.problem(field + ".type", "unknown layer type '" + type + "' (known: " + known + ")");
    }
    layer.kind = found->kind;
    switch (layer.kind) {
    case model::LayerKind::Linear:
        if (r.object(j, field, {"type", "in", "out"})) {
            r.integer(j, field, "in", layer.in, 1, 1 << 20, true);
            r.integer(j, field, "out", layer.out, 1, 1 << 20, true);
        }
        break;
    case model::LayerKind::Conv2d:
        if (r.object(j, field, {"type", "in", "out", "kernel", "stride", "padding"})) {
            r.integer(j, field, "in", layer.in, 1, 4096, true);
            r.integer(j, field, "out", layer.out, 1, 4096, true);
            r.integer(j, field, "kernel", layer.kernel, 1, 64, true);
            r.integer(j, field, "stride", layer.stride, 1, 64);
            r.integer(j, field, "padding", layer.padding, 0, 64);
        }
        break;
    case model::LayerKind::MaxPool2d:
    case model::LayerKind::AvgPool2d:
        if (r.object(j, field, {"type", "kernel", "stride"})) {
            r.integer(j, field, "kernel", layer.kernel, 1, 64, true);
            layer.stride = layer.kernel; // as PyTorch's default
            r.integer(j, field, "stride", layer.stride, 1, 64);
        }
        break;
    case model::LayerKind::Residual:
        if (r.object(j, field, {"type", "channels", "kernel"})) {
            r.integer(j, field, "channels", layer.in, 1, 4096, true);
            layer.out = layer.in;
            layer.kernel = 3;
            r.integer(j, field, "kernel", layer.kernel, 1, 15);
            if (layer.kernel % 2 == 0)
                r.problem(field + ".kernel", "must be odd (the block keeps its input's height and width)");
        }
        break;
    case model::LayerKind::LayerNorm:
        if (r.object(j, field, {"type", "features"}))
            r.integer(j, field, "features", layer.in, 1, 1 << 20, true);
        break;
    case model::LayerKind::BatchNorm:
        if (r.object(j, field, {"type", "features"}))
            r.integer(j, field, "features", layer.in, 1, 1 << 20, true);
        break;
    case model::LayerKind::Dropout:
        if (r.object(j, field, {"type", "rate"})) {
            r.number(j, field, "rate", layer.rate, 0, 0.99, true);
        }
        break;
    case model::LayerKind::PatchEmbed:
        if (r.object(j, field, {"type", "in", "dim", "patch"})) {
            r.integer(j, field, "in", layer.in, 1, 4096, true);
            r.integer(j, field, "dim", layer.out, 1, 1 << 16, true);
            r.integer(j, field, "patch", layer.kernel, 1, 64, true);
        }
        break;
    case model::LayerKind::Encoder:
        if (r.object(j, field, {"type", "dim", "heads", "hidden"})) {
            r.integer(j, field, "dim", layer.in, 1, 1 << 16, true);
            layer.out = layer.in;
            r.integer(j, field, "heads", layer.heads, 1, 1024, true);
            layer.hidden = 4 * layer.in; // as ViT's
            r.integer(j, field, "hidden", layer.hidden, 1, 1 << 18);
            if (layer.in > 0 && layer.heads > 0 && layer.in % layer.heads != 0)
                r.problem(field + ".heads", "must divide dim (" + std::to_string(layer.in) + ") into equal heads");
        }
        break;
    case model::LayerKind::Flatten:
    case model::LayerKind::ReLU:
    case model::LayerKind::GELU:
    case model::LayerKind::Tanh:
    case model::LayerKind::TokenMean:
        r.object(j, field, {"type"});
        break;
    }
}

void readModel(Reader &r, const json &j, const std::string &jobName, model::ModelSpec &spec)
{
    if (!r.object(j, "model", {"zoo", "name", "input", "classes", "layers"}))
        return;
    if (j.contains("zoo")) {
        std::string zoo;
        r.text(j, "model", "zoo", zoo, 64, true);
        if (zoo.empty())
            return;
        for (const char *other : {"input", "classes", "layers"})
            if (j.contains(other))
                r.problem(std::string("model.") + other, "not with model.zoo: a zoo model is defined already");
        try {
            spec = model::modelByName(zoo);
        } catch (const Error &e) {
            r.problem("model.zoo", e.what());
        }
        return;
    }
    spec = {};
    spec.name = jobName;
    r.text(j, "model", "name", spec.name, 64);
    if (const auto *input = r.find(j, "model", "input", true)) {
        if (!input->is_array() || input->empty() || input->size() > 3)
            r.problem("model.input", "must be the shape of one sample, 1 to 3 whole numbers such as [1, 28, 28]");
        else
            for (size_t i = 0; i < input->size(); ++i) {
                const auto &d = (*input)[i];
                if (!d.is_number_integer() || d.get<int64_t>() < 1 || d.get<int64_t>() > 65536)
                    r.problem("model.input[" + std::to_string(i) + "]", "must be from 1 to 65536, not " + d.dump());
                else
                    spec.input.dims.push_back(d.get<int64_t>());
            }
    }
    r.integer(j, "model", "classes", spec.classes, 2, 100000, true);
    const auto *layers = r.find(j, "model", "layers", true);
    if (!layers)
        return;
    if (!layers->is_array() || layers->empty() || layers->size() > 1024)
        return r.problem("model.layers", "must be a list of 1 to 1,024 layers");
    spec.layers.resize(layers->size());
    for (size_t i = 0; i < layers->size(); ++i)
        readLayer(r, (*layers)[i], "model.layers[" + std::to_string(i) + "]", spec.layers[i]);
}

void readOptimizer(Reader &r, const json &j, train::OptimizerConfig &o)
{
    if (!r.object(j, "optimizer",
                  {"kind", "lr", "momentum", "weight_decay", "beta1", "beta2", "epsilon", "schedule", "warmup_steps",
                   "final_lr_factor"}))
        return;
    std::string kind = "sgd";
    r.text(j, "optimizer", "kind", kind, 16);
    if (kind == "adamw") {
        o.kind = train::OptimizerKind::AdamW;
        o.learningRate = 0.001;
        if (j.contains("momentum"))
            r.problem("optimizer.momentum", "is for sgd; adamw has beta1 and beta2");
    } else if (kind != "sgd") {
        r.problem("optimizer.kind", "must be \"sgd\" or \"adamw\", not \"" + kind + "\"");
    }
    r.number(j, "optimizer", "lr", o.learningRate, 1e-6, 10);
    if (o.kind == train::OptimizerKind::Sgd)
        r.number(j, "optimizer", "momentum", o.momentum, 0, 0.999);
    r.number(j, "optimizer", "weight_decay", o.weightDecay, 0, 0.5);
    r.number(j, "optimizer", "beta1", o.beta1, 0, 0.9999);
    r.number(j, "optimizer", "beta2", o.beta2, 0, 0.99999);
    r.number(j, "optimizer", "epsilon", o.epsilon, 1e-12, 1e-3);
    std::string schedule = train::decayName(o.decay);
    r.text(j, "optimizer", "schedule", schedule, 16);
    try {
        o.decay = train::decayFromName(schedule);
    } catch (const Error &) {
        r.problem("optimizer.schedule", "must be \"tail\", \"cosine\" or \"constant\", not \"" + schedule + "\"");
    }
    r.integer(j, "optimizer", "warmup_steps", o.warmupSteps, 0, int64_t(1) << 40);
    r.number(j, "optimizer", "final_lr_factor", o.finalLearningRateFactor, 0, 1);
}

void readAveraging(Reader &r, const json &j, RunConfig &run)
{
    if (!r.object(j, "averaging", {"interval", "outer_lr", "outer_momentum", "overlap"}))
        return;
    r.integer(j, "averaging", "interval", run.averagingInterval, 1, 1000000);
    r.number(j, "averaging", "outer_lr", run.outerLearningRate, 1e-3, 2);
    r.number(j, "averaging", "outer_momentum", run.outerMomentum, 0, 0.99);
    r.boolean(j, "averaging", "overlap", run.overlapAveraging);
}

void readDataset(Reader &r, const json &j, Job &job)
{
    if (!r.object(j, "dataset", {"name", "sha256"}))
        return;
    r.text(j, "dataset", "name", job.run.dataset, 64, true);
    if (job.run.dataset.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789._-") != std::string::npos ||
        job.run.dataset.rfind('.', 0) == 0)
        r.problem("dataset.name", "'" + job.run.dataset + "' is not made of a-z, 0-9, '.', '_' and '-'");
    r.text(j, "dataset", "sha256", job.datasetSha256, 64);
    if (!job.datasetSha256.empty() && !data::isSha256(job.datasetSha256))
        r.problem("dataset.sha256", "must be 64 lowercase hex digits (rookery-coordinator dataset add prints it)");
    else if (job.datasetSha256.empty() && job.run.dataset != "fashion-mnist")
        r.problem("dataset.sha256", "required for a dataset other than fashion-mnist (rookery-coordinator dataset "
                                    "add prints it)");
    job.run.datasetSha256 = job.datasetSha256;
}

// "FILE:LINE:COLUMN" of byte `offset` in `text` (both 1-based).
std::string where(const std::string &source, std::string_view text, size_t offset)
{
    size_t line = 1, column = 1;
    for (size_t i = 0; i < offset && i < text.size(); ++i, ++column)
        if (text[i] == '\n') {
            ++line;
            column = 0;
        }
    return source + ":" + std::to_string(line) + ":" + std::to_string(column);
}

} // namespace

Job parseJob(std::string_view text, const std::string &source)
{
    json j;
    try {
        j = json::parse(text);
    } catch (const json::parse_error &e) {
        std::string what = e.what();
        if (const auto at = what.find("syntax error"); at != std::string::npos)
            what = what.substr(at);
        throw Error(where(source, text, e.byte > 0 ? e.byte - 1 : 0) + ": not valid JSON: " + what);
    }
    Reader r(source);
    Job job;
    if (!r.object(j, "",
                  {"rookery_job", "name", "model", "optimizer", "microbatch", "accumulation", "max_window", "steps",
                   "seed", "averaging", "dataset"}))
        throw Error(r.problems().front());
    int format = 0;
    r.integer(j, "", "rookery_job", format, 1, 1000, true);
    if (format > kJobFormat)
        r.problem("rookery_job", "format " + std::to_string(format) + " is newer than this coordinator reads (" +
                                     std::to_string(kJobFormat) + "); update Rookery");
    r.text(j, "", "name", job.name, 64, true);
    if (const auto *m = r.find(j, "", "model", true))
        readModel(r, *m, job.name, job.run.model);
    if (const auto *o = r.find(j, "", "optimizer", false))
        readOptimizer(r, *o, job.run.optimizer);
    r.integer(j, "", "microbatch", job.run.microbatch, 1, 60000);
    r.integer(j, "", "accumulation", job.run.accumulation, 1, 4096);
    r.integer(j, "", "max_window", job.run.maxWindow, 0, kMaxWindowLimit);
    r.integer(j, "", "steps", job.run.totalSteps, 1, int64_t(1) << 40, true);
    r.integer(j, "", "seed", job.run.seed, 0, INT64_MAX);
    if (const auto *a = r.find(j, "", "averaging", false))
        readAveraging(r, *a, job.run);
    if (const auto *d = r.find(j, "", "dataset", false))
        readDataset(r, *d, job);
    if (job.run.optimizer.warmupSteps >= job.run.totalSteps && job.run.optimizer.warmupSteps > 0)
        r.problem("optimizer.warmup_steps", std::to_string(job.run.optimizer.warmupSteps) + " is not below the run's " +
                                                std::to_string(job.run.totalSteps) + " steps");
    if (r.problems().empty()) { // the fields are each right: do they make a model and a run?
        try {
            validate(job.run);
            if (const std::string why = tooBigForAnyCluster(job.run); !why.empty())
                r.problem("model", why);
        } catch (const Error &e) {
            r.problem("model", e.what());
        }
    }
    if (!r.problems().empty()) {
        std::string all;
        for (const auto &p : r.problems())
            all += (all.empty() ? "" : "\n") + p;
        throw Error(all);
    }
    return job;
}

Job readJobFile(const std::filesystem::path &path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw Error("cannot read the job file " + path.string());
    std::ostringstream text;
    text << in.rdbuf();
    if (text.str().size() > (size_t(1) << 20))
        throw Error(path.string() + ": a job file is at most 1 MiB");
    return parseJob(text.str(), path.string());
}

std::string datasetContentHash(const std::filesystem::path &dir)
{
    const auto train = data::loadFashionMnist(dir, data::Split::Train);
    const auto test = data::loadFashionMnist(dir, data::Split::Test);
    return sha256Hex(
        data::manifestBytes(data::cutIntoShards("fashion-mnist", train, test, data::kDefaultShardSamples, {})));
}

} // namespace rookery::coord

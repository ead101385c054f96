// SPDX-License-Identifier: GPL-3.0-or-later
// Job files: the reference jobs read into the models they describe; every field's
// problem is named (field by field, all of them at once, line and column where the JSON
// does not parse); the dataset's content hash catches a changed byte; and a job reaches
// the nodes as it was written.
#include <QtTest>

#include <optional>

#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "engine/coord/coordinator.h"
#include "engine/coord/dataset_library.h"
#include "engine/coord/job_file.h"
#include "engine/model/model_zoo.h"
#include "engine/model/partitioner.h"
#include "engine/swarm/swarm_planner.h"
#include "engine/train/optimizer_config.h"
#include "tests/engine/coord/coord_test_support.h"
#include "tests/support/test_support.h"

using namespace rookery;
using nlohmann::json;

namespace {

const std::filesystem::path kJobs = ROOKERY_JOBS_DIR;

json referenceJob()
{
    std::ifstream in(kJobs / "mlp.json");
    return json::parse(in);
}

// The problems parseJob() reports for `text`, one per line; empty when it is accepted.
QStringList problemsOf(const std::string &text)
{
    try {
        coord::parseJob(text, "job.json");
        return {};
    } catch (const Error &e) {
        return QString::fromStdString(e.what()).split(QLatin1Char('\n'));
    }
}

// Fashion-MNIST's four files, small (30 training and 10 test images of 28x28, plain
// IDX): `variant` changes one label.
void writeFashionLike(const std::filesystem::path &dir, int variant)
{
    std::filesystem::create_directories(dir);
    const auto idx = [](int dims, uint32_t count) {
        std::string out{0, 0, 8, char(dims)};
        const uint32_t sizes[] = {count, 28, 28};
        for (int d = 0; d < dims; ++d)
            for (int shift = 24; shift >= 0; shift -= 8)
                out += char(sizes[d] >> shift & 0xff);
        return out;
    };
    for (auto [prefix, count] : {std::pair{"train", 30u}, std::pair{"t10k", 10u}}) {
        std::string images = idx(3, count), labels = idx(1, count);
        for (uint32_t i = 0; i < count * 784; ++i)
            images += char(i * 13 % 251);
        for (uint32_t i = 0; i < count; ++i)
            labels += char(i % 10);
        if (variant == 1 && std::string(prefix) == "t10k")
            labels.back() = 3;
        std::ofstream(dir / (std::string(prefix) + "-images-idx3-ubyte.gz"), std::ios::binary) << images;
        std::ofstream(dir / (std::string(prefix) + "-labels-idx1-ubyte.gz"), std::ios::binary) << labels;
    }
}

} // namespace

class TestJobFile : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void theReferenceJobsDescribeTheZoosModels()
    {
        const auto mlp = coord::readJobFile(kJobs / "mlp.json");
        QCOMPARE(mlp.name, std::string("fashion-mnist-mlp"));
        QVERIFY(mlp.run.model == model::mlpSpec());
        QCOMPARE(mlp.run.optimizer.kind, train::OptimizerKind::Sgd);
        QCOMPARE(mlp.run.optimizer.learningRate, 0.05);
        QCOMPARE(mlp.run.totalSteps, int64_t(10000));
        QCOMPARE(mlp.run.maxWindow, int64_t(0)); // the nodes' default (benchmarks.md, "The window cap")
        QCOMPARE(mlp.datasetSha256.size(), size_t(64));
        const auto cnn = coord::readJobFile(kJobs / "cnn.json");
        QVERIFY(cnn.run.model == model::cnnSpec()); // maxpool's stride defaults to its kernel
        QCOMPARE(cnn.run.optimizer.kind, train::OptimizerKind::AdamW);
        QCOMPARE(cnn.run.optimizer.learningRate, 0.001);
    }

    void everyFieldIsChecked_data()
    {
        QTest::addColumn<QString>("pointer"); // a JSON pointer into the reference job
        QTest::addColumn<QString>("value");   // JSON; "" removes the field
        QTest::addColumn<QString>("says");
        const auto row = [](const char *name, const char *pointer, const char *value, const char *says) {
            QTest::newRow(name) << pointer << value << says;
        };
        row("format missing", "/rookery_job", "", "job.json: rookery_job: is missing");
        row("format too new", "/rookery_job", "7", "rookery_job: format 7 is newer");
        row("name missing", "/name", "", "job.json: name: is missing");
        row("name empty", "/name", "\"\"", "name: must be 1 to 64 characters");
        row("unknown top field", "/colour", "\"blue\"", "colour: unknown field (known here: rookery_job");
        row("model missing", "/model", "", "model: is missing");
        row("model not an object", "/model", "[]", "model: must be an object");
        row("zoo unknown", "/model", "{\"zoo\": \"resnet\"}", "model.zoo: unknown model 'resnet'");
        row("zoo and layers", "/model/zoo", "\"mlp\"", "model.layers: not with model.zoo");
        row("input empty", "/model/input", "[]", "model.input: must be the shape of one sample");
        row("input zero", "/model/input/1", "0", "model.input[1]: must be from 1 to 65536, not 0");
        row("classes too few", "/model/classes", "1", "model.classes: must be from 2 to 100000, not 1");
        row("layers empty", "/model/layers", "[]", "model.layers: must be a list of 1 to 1,024 layers");
        row("layer not an object", "/model/layers/0", "\"flatten\"", "model.layers[0]: must be an object");
        row("layer type missing", "/model/layers/0/type", "", "model.layers[0].type: is missing");
        row("unknown layer type", "/model/layers/2/type", "\"attention\"",
            "model.layers[2].type: unknown layer type 'attention' (known: flatten, linear, relu, gelu, tanh, conv2d, "
            "maxpool2d, avgpool2d, layernorm, batchnorm, dropout, residual, patchembed, encoder, tokenmean)");
        row("layer field unknown", "/model/layers/2/heads", "4",
            "model.layers[2].heads: unknown field (known here: type)");
        row("linear out fraction", "/model/layers/1/out", "512.5",
            "model.layers[1].out: must be a whole number, not 512.5");
        row("linear in missing", "/model/layers/1/in", "", "model.layers[1].in: is missing");
        row("linear in negative", "/model/layers/1/in", "-784",
            "model.layers[1].in: must be from 1 to 1048576, not -784");
        row("shapes do not chain", "/model/layers/3/in", "500",
            "model: model layer 3 (Linear(500->512)): expects 500 features but receives 512");
        row("logits not classes", "/model/layers/5/out", "11",
            "model: model 'mlp' ends in 11 outputs but has 10 classes");
        row("optimizer kind", "/optimizer/kind", "\"adam\"",
            "optimizer.kind: must be \"sgd\" or \"adamw\", not \"adam\"");
        row("lr negative", "/optimizer/lr", "-1", "optimizer.lr: must be from 1e-06 to 10, not -1");
        row("lr text", "/optimizer/lr", "\"fast\"", "optimizer.lr: must be a number, not \"fast\"");
        row("momentum too high", "/optimizer/momentum", "1.5", "optimizer.momentum: must be from 0 to 0.999");
        row("weight decay", "/optimizer/weight_decay", "2", "optimizer.weight_decay: must be from 0 to 0.5");
        row("optimizer field unknown", "/optimizer/betas", "[0.9, 0.99]", "optimizer.betas: unknown field");
        row("microbatch zero", "/microbatch", "0", "microbatch: must be from 1 to 60000, not 0");
        row("accumulation", "/accumulation", "5000", "accumulation: must be from 1 to 4096, not 5000");
        row("window cap", "/max_window", "17", "max_window: must be from 0 to 16, not 17");
        row("steps missing", "/steps", "", "steps: is missing");
        row("steps zero", "/steps", "0", "steps: must be from 1 to");
        row("seed negative", "/seed", "-1", "seed: must be from 0 to");
        row("interval zero", "/averaging/interval", "0", "averaging.interval: must be from 1 to 1000000, not 0");
        row("outer lr", "/averaging/outer_lr", "3", "averaging.outer_lr: must be from 0.001 to 2, not 3");
        row("outer momentum", "/averaging/outer_momentum", "1", "averaging.outer_momentum: must be from 0 to 0.99");
        row("overlap not bool", "/averaging/overlap", "1", "averaging.overlap: must be true or false, not 1");
        row("dataset without hash", "/dataset", "{\"name\": \"cifar-10\"}",
            "dataset.sha256: required for a dataset other than fashion-mnist");
        row("schedule unknown", "/optimizer/schedule", "\"step\"",
            "optimizer.schedule: must be \"tail\", \"cosine\" or \"constant\", not \"step\"");
        row("warm-up past the end", "/optimizer/warmup_steps", "10000",
            "optimizer.warmup_steps: 10000 is not below the run's 10000 steps");
        row("final factor", "/optimizer/final_lr_factor", "2", "optimizer.final_lr_factor: must be from 0 to 1");
        row("dataset name", "/dataset/name", "\"My Data\"", "dataset.name: 'My Data' is not made of");
        row("dataset hash short", "/dataset/sha256", "\"abc\"", "dataset.sha256: must be 64 lowercase hex digits");
    }

    void everyFieldIsChecked()
    {
        QFETCH(QString, pointer);
        QFETCH(QString, value);
        QFETCH(QString, says);
        json job = referenceJob();
        const json::json_pointer at(pointer.toStdString());
        if (value.isEmpty())
            job.at(at.parent_pointer()).erase(at.back());
        else
            job[at] = json::parse(value.toStdString());
        const auto problems = problemsOf(job.dump(2));
        QVERIFY2(!problems.isEmpty(), qPrintable(pointer + QStringLiteral(" was accepted")));
        QVERIFY2(problems.join(QLatin1Char('\n')).contains(says), qPrintable(problems.join(QLatin1Char('\n'))));
    }

    void residualBlocksAreOneLayer()
    {
        const auto job = coord::readJobFile(kJobs / "rescnn.json");
        QVERIFY(model::parameterCount(job.run.model) >= 1'000'000 && model::parameterCount(job.run.model) <= 5'000'000);
        int blocks = 0;
        for (const auto &l : job.run.model.layers)
            if (l.kind == model::LayerKind::Residual) {
                ++blocks;
                QCOMPARE(l.out, l.in);
                QCOMPARE(l.kernel, 3);
            }
        QCOMPARE(blocks, 3);
        json bad = json::parse(R"({"rookery_job": 1, "name": "r", "steps": 10, "model": {"input": [1, 28, 28],
            "classes": 10, "layers": [{"type": "conv2d", "in": 1, "out": 8, "kernel": 3, "padding": 1},
            {"type": "residual", "channels": 8, "kernel": 4}, {"type": "residual", "channels": 16},
            {"type": "flatten"}, {"type": "linear", "in": 6272, "out": 10}]}})");
        const auto problems = problemsOf(bad.dump()).join(QLatin1Char('\n'));
        QVERIFY2(problems.contains(QLatin1String("model.layers[1].kernel: must be odd")), qPrintable(problems));
        bad["model"]["layers"][1]["kernel"] = 3;
        const auto chained = problemsOf(bad.dump()).join(QLatin1Char('\n'));
        QVERIFY2(chained.contains(QLatin1String("model layer 2 (Residual(16, k3)): expects 16 input channels")),
                 qPrintable(chained));
    }

    // Acceptance (issue 18): the vision transformer holds at least 10M parameters, and
    // its weights with AdamW's two moments alone outgrow a volunteer capped at 256 MiB,
    // so the planner must split it; three such volunteers hold it, cut between blocks.
    void theVisionTransformerMustBeSplit()
    {
        const auto job = coord::readJobFile(kJobs / "vit.json");
        const auto &spec = job.run.model;
        const int64_t parameters = model::parameterCount(spec);
        QVERIFY2(parameters >= 10'000'000, qPrintable(QString::number(parameters)));
        QCOMPARE(job.run.optimizer.kind, train::OptimizerKind::AdamW);
        constexpr uint64_t cap = uint64_t(256) << 20;
        QVERIFY(uint64_t(parameters) * 4 * 3 > cap);
        int blocks = 0;
        for (const auto &l : spec.layers)
            blocks += l.kind == model::LayerKind::Encoder;
        QCOMPARE(blocks, 8);
        QCOMPARE(spec.layers.front().kind, model::LayerKind::PatchEmbed);
        const auto costs = model::layerCosts(spec, job.run.microbatch);
        const auto options =
            model::partitionOptionsFor(spec, job.run.microbatch, train::stateCopies(job.run.optimizer));
        const auto capped = [&](size_t n) { return std::vector<model::StageDevice>(n, {"capped", 50, cap}); };
        QVERIFY(!model::tryPartitionLayers(costs, capped(1), options));
        QVERIFY(!model::tryPartitionLayers(costs, capped(2), options));
        // Some number of capped volunteers holds it, each a stage.
        size_t needed = 0;
        std::optional<model::Partition> cut;
        for (size_t k = 3; k <= 10 && !cut; ++k)
            if ((cut = model::tryPartitionLayers(costs, capped(k), options)))
                needed = k;
        QVERIFY(cut && cut->fits());
        // The coordinator forms a cluster once its members' memory covers the model's
        // demand: one volunteer more than the cut needs does.
        const auto demand = swarm::demandOf({spec, job.run.microbatch, train::stateCopies(job.run.optimizer)});
        QVERIFY2(demand.memoryBytes <= int64_t((needed + 1) * cap),
                 qPrintable(QString::number(demand.memoryBytes >> 20)));
        qInfo("%lld parameters, demand %lld MiB; on %zu volunteers of 256 MiB: %s", (long long)parameters,
              (long long)(demand.memoryBytes >> 20), needed, cut->describe().c_str());
    }

    void transformerLayersAreRead()
    {
        json job = json::parse(R"({"rookery_job": 1, "name": "t", "steps": 10, "model": {"input": [1, 28, 28],
            "classes": 10, "layers": [{"type": "patchembed", "in": 1, "dim": 32, "patch": 7},
            {"type": "dropout", "rate": 0.2}, {"type": "encoder", "dim": 32, "heads": 4},
            {"type": "tokenmean"}, {"type": "batchnorm", "features": 32},
            {"type": "linear", "in": 32, "out": 10}]}})");
        const QStringList none = problemsOf(job.dump());
        QVERIFY2(none.isEmpty(), qPrintable(none.join(QLatin1Char('\n'))));
        const auto &layers = coord::parseJob(job.dump(), "t.json").run.model.layers;
        QCOMPARE(layers[0].kind, model::LayerKind::PatchEmbed);
        QCOMPARE(layers[0].out, int64_t(32));
        QCOMPARE(layers[0].kernel, 7);
        QCOMPARE(layers[1].rate, 0.2);
        QCOMPARE(layers[2].kind, model::LayerKind::Encoder);
        QCOMPARE(layers[2].out, int64_t(32));
        QCOMPARE(layers[2].hidden, int64_t(4 * 32)); // ViT's default
        QCOMPARE(layers[2].heads, 4);
        QCOMPARE(layers[3].kind, model::LayerKind::TokenMean);
        QCOMPARE(layers[4].in, int64_t(32));
        const auto says = [&](const json &bad, const char *text) {
            const auto problems = problemsOf(bad.dump()).join(QLatin1Char('\n'));
            QVERIFY2(problems.contains(QLatin1String(text)), qPrintable(problems));
        };
        json bad = job;
        bad["model"]["layers"][2]["heads"] = 5;
        says(bad, "model.layers[2].heads: must divide dim (32) into equal heads");
        bad = job;
        bad["model"]["layers"][1]["rate"] = 1;
        says(bad, "model.layers[1].rate: must be from 0 to 0.99, not 1");
        bad = job;
        bad["model"]["layers"][0]["patch"] = 30;
        says(bad, "model layer 0 (PatchEmbed(1->32, patch 30)): patch larger than its input 1x28x28");
        bad = job;
        bad["model"]["layers"][2]["dim"] = 64;
        says(bad, "model layer 2 (Encoder(64, 4 heads, hidden 256)): expects tokens of 64 values (TxD) but receives "
                  "16x32");
        bad = job;
        bad["model"]["layers"][2].erase("heads");
        says(bad, "model.layers[2].heads: is missing");
        bad = job;
        bad["model"]["layers"][3]["type"] = "flatten";
        says(bad, "model layer 4 (BatchNorm(32)): expects 32 features (F) or channels (CxHxW) but receives 512");
    }

    void normsActivationsAndAveragePoolingAreRead()
    {
        json job = json::parse(R"({"rookery_job": 1, "name": "n", "steps": 10, "model": {"input": [1, 28, 28],
            "classes": 10, "layers": [{"type": "conv2d", "in": 1, "out": 4, "kernel": 3, "padding": 1},
            {"type": "gelu"}, {"type": "avgpool2d", "kernel": 2}, {"type": "tanh"}, {"type": "flatten"},
            {"type": "linear", "in": 784, "out": 32}, {"type": "layernorm", "features": 32},
            {"type": "linear", "in": 32, "out": 10}]}})");
        const QStringList none = problemsOf(job.dump());
        QVERIFY2(none.isEmpty(), qPrintable(none.join(QLatin1Char('\n'))));
        const auto parsed = coord::parseJob(job.dump(), "n.json");
        const auto &layers = parsed.run.model.layers;
        QCOMPARE(layers[1].kind, model::LayerKind::GELU);
        QCOMPARE(layers[2].kind, model::LayerKind::AvgPool2d);
        QCOMPARE(layers[2].stride, 2); // the kernel, as PyTorch's default
        QCOMPARE(layers[3].kind, model::LayerKind::Tanh);
        QCOMPARE(layers[6].kind, model::LayerKind::LayerNorm);
        QCOMPARE(layers[6].in, int64_t(32));
        job["model"]["layers"][6].erase("features");
        QVERIFY2(problemsOf(job.dump()).join(QLatin1Char('\n')).contains("model.layers[6].features: is missing"),
                 qPrintable(problemsOf(job.dump()).join(QLatin1Char('\n'))));
        job["model"]["layers"][6]["features"] = 16;
        QVERIFY2(problemsOf(job.dump())
                     .join(QLatin1Char('\n'))
                     .contains("model layer 6 (LayerNorm(16)): normalises the last 16 values but receives 32"),
                 qPrintable(problemsOf(job.dump()).join(QLatin1Char('\n'))));
        job["model"]["layers"][1]["alpha"] = 1;
        QVERIFY2(problemsOf(job.dump()).join(QLatin1Char('\n')).contains("model.layers[1].alpha: unknown field"),
                 qPrintable(problemsOf(job.dump()).join(QLatin1Char('\n'))));
    }

    // A layer of 2^40 weights needs terabytes: no cluster of volunteers could hold it,
    // so the job is refused at start instead of waiting for volunteers forever. The
    // same model with a layer a thousand times smaller is accepted.
    void aModelNoClusterCouldHoldIsRefused()
    {
        json job = json::parse(R"({"rookery_job": 1, "name": "huge", "steps": 10, "model": {"input": [16, 256, 256],
            "classes": 10, "layers": [{"type": "flatten"}, {"type": "linear", "in": 1048576, "out": 1048576},
            {"type": "relu"}, {"type": "linear", "in": 1048576, "out": 10}]}})");
        const QString problems = problemsOf(job.dump()).join(QLatin1Char('\n'));
        QVERIFY2(problems.contains(QLatin1String(
                     "model: too big for any cluster: cut into 4 stages on volunteers of 64 GiB each, it still does "
                     "not fit (device 1 ('a volunteer') has 64.0 GiB of memory, too little for any stage: the "
                     "smallest it could hold (layer 1, 1099512676352 parameters) needs 48.0 TiB)")),
                 qPrintable(problems));
        job["model"]["layers"][1]["out"] = 1024;
        job["model"]["layers"][3]["in"] = 1024;
        const QStringList fits = problemsOf(job.dump());
        QVERIFY2(fits.isEmpty(), qPrintable(fits.join(QLatin1Char('\n'))));
    }

    void everyProblemIsReportedAtOnce()
    {
        json job = referenceJob();
        job["model"]["layers"][2]["type"] = "attention";
        job["optimizer"]["lr"] = -1;
        job["steps"] = 0;
        job["colour"] = "blue";
        const auto problems = problemsOf(job.dump(2));
        QCOMPARE(problems.size(), 4);
        for (const auto &p : problems)
            QVERIFY2(p.startsWith(QLatin1String("job.json: ")), qPrintable(p));
    }

    void brokenJsonNamesItsLineAndColumn()
    {
        const auto problems = problemsOf("{\n  \"rookery_job\": 1,\n  \"name\": \"x\",,\n}");
        QCOMPARE(problems.size(), 1);
        QVERIFY2(problems[0].startsWith(QLatin1String("job.json:3:15: not valid JSON")), qPrintable(problems[0]));
        QVERIFY(problemsOf("[1, 2]").join(QString()).contains(QLatin1String("must be an object")));
        QVERIFY_THROWS_EXCEPTION(Error, coord::readJobFile("/nonexistent/job.json"));
    }

    // The coordinator settles what it serves before it starts: the job's hash must be
    // what the store holds, or what its copy of Fashion-MNIST hashes to; a changed byte
    // changes the hash, and a mismatch names both hashes.
    void theDatasetHashCatchesAChangedByte()
    {
        QTemporaryDir dir;
        const std::filesystem::path copy = dir.filePath(QStringLiteral("copy")).toStdString();
        const std::filesystem::path dataDir = dir.filePath(QStringLiteral("coordinator")).toStdString();
        writeFashionLike(copy, 0);
        const std::string hash = coord::datasetContentHash(copy);
        QCOMPARE(hash.size(), size_t(64));
        QCOMPARE(coord::datasetContentHash(copy), hash); // the same data, the same hash

        coord::RunConfig run;
        coord::settleServedDataset(run, hash, dataDir, copy); // matches: served
        QCOMPARE(run.datasetSha256, hash);
        QVERIFY(std::filesystem::exists(coord::datasetStoreOf(dataDir) / hash));
        const std::string stored = hash;

        writeFashionLike(copy, 1); // one label changed
        QVERIFY(coord::datasetContentHash(copy) != hash);
        coord::RunConfig changed;
        const std::string other = std::string(64, 'b');
        try {
            coord::settleServedDataset(changed, other, dataDir, copy);
            QFAIL("a changed dataset was accepted");
        } catch (const Error &e) {
            const std::string what = e.what();
            QVERIFY2(what.find(other) != std::string::npos &&
                         what.find(coord::datasetContentHash(copy)) != std::string::npos,
                     e.what());
        }
        // What the store holds is served without a copy; what it does not, is refused.
        const std::filesystem::path none = dir.filePath(QStringLiteral("none")).toStdString();
        coord::RunConfig fromStore;
        coord::settleServedDataset(fromStore, stored, dataDir, none);
        QCOMPARE(fromStore.datasetSha256, stored);
        try {
            coord::RunConfig missing;
            coord::settleServedDataset(missing, other, dataDir, none);
            QFAIL("a dataset the store lacks was accepted");
        } catch (const Error &e) {
            QVERIFY2(std::string(e.what()).find("dataset add") != std::string::npos, e.what());
        }
        // Without a copy and without a hash, Fashion-MNIST is not served; any other
        // dataset must be in the store by its name.
        coord::RunConfig plain;
        coord::settleServedDataset(plain, "", dataDir, none);
        QVERIFY(plain.datasetSha256.empty());
        coord::RunConfig digits;
        digits.dataset = "digits";
        QVERIFY_EXCEPTION_THROWN(coord::settleServedDataset(digits, "", dataDir, none), Error);
        const auto images = data::loadFashionMnist(copy, data::Split::Train);
        const auto added = coord::addDataset(dataDir, "digits", images, images, 7);
        coord::settleServedDataset(digits, "", dataDir, none);
        QCOMPARE(digits.datasetSha256, added.sha256);
        QCOMPARE(added.manifest.train.size(), size_t(5)); // 30 samples, 7 a shard

        // The reference jobs name the Debian package's copy.
        if (std::filesystem::exists(test::fashionMnistDir()))
            QCOMPARE(coord::datasetContentHash(test::fashionMnistDir()),
                     coord::readJobFile(kJobs / "mlp.json").datasetSha256);
    }

    // A job reaches the nodes as it was written: the run a node learns at registration is
    // the job's (the coordinator names the run).
    void aJobReachesTheNodesAsWritten()
    {
        const auto job = coord::readJobFile(kJobs / "cnn.json");
        QTemporaryDir dir;
        auto s = test::testSettings(dir.path().toStdString());
        s.run = job.run;
        // As rookery-coordinator does: the job's dataset must be served by its hash.
        coord::settleServedDataset(s.run, job.datasetSha256, s.dataDir, test::fashionMnistDir());
        QCOMPARE(s.run.datasetSha256, job.datasetSha256);
        coord::Coordinator c(s);
        net::NetContext ctx(1);
        test::TestNode node;
        node.start(ctx, c.coordinatorAddress(), 50, 1u << 30);
        QVERIFY(test::eventually([&] { return node.client->registration().has_value(); }));
        auto received = node.client->registration()->run;
        QVERIFY(!received.runId.empty());
        received.runId.clear();
        QVERIFY(received == job.run);
    }
};

QTEST_APPLESS_MAIN(TestJobFile)
#include "tst_job_file.moc"

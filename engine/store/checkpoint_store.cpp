// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/store/checkpoint_store.h"

#include <chrono>
#include <sstream>

#include "engine/common/error.h"
#include "engine/common/wall_clock.h"
#include "engine/store/schema.h"
#include "engine/store/sqlite_db.h"

namespace rookery::store {
namespace {

enum TensorKind : int64_t { kParameter = 0, kOptimizer = 1 };

std::string shapeToText(const std::vector<int64_t> &shape)
{
    std::string s;
    for (auto d : shape)
        s += (s.empty() ? "" : ",") + std::to_string(d);
    return s;
}

std::vector<int64_t> shapeFromText(const std::string &text)
{
    std::vector<int64_t> shape;
    std::stringstream in(text);
    std::string part;
    while (std::getline(in, part, ','))
        shape.push_back(std::stoll(part));
    return shape;
}

void insertTensors(Database &db, int64_t id, TensorKind kind, const std::vector<NamedTensor> &tensors)
{
    Statement insert = db.prepare("INSERT INTO checkpoint_tensors (checkpoint_id, kind, position, name, dtype, shape, "
                                  "data) VALUES (?, ?, ?, ?, ?, ?, ?)");
    for (size_t i = 0; i < tensors.size(); ++i) {
        const auto &t = tensors[i];
        insert.bind(1, id).bind(2, int64_t(kind)).bind(3, int64_t(i)).bind(4, std::string_view(t.name));
        insert.bind(5, int64_t(t.dtype)).bind(6, std::string_view(shapeToText(t.shape))).bindBlob(7, t.data);
        insert.run();
        insert.reset();
    }
}

const char *kInfoColumns = "SELECT c.id, c.run, c.step, c.created_at, c.model_spec, "
                           "(SELECT coalesce(sum(length(data)), 0) FROM checkpoint_tensors t WHERE t.checkpoint_id = "
                           "c.id) FROM checkpoints c ";

CheckpointInfo readInfo(Statement &s)
{
    CheckpointInfo info;
    info.id = s.columnInt(0);
    info.run = s.columnText(1);
    info.step = s.columnInt(2);
    info.createdAtMs = s.columnInt(3);
    try {
        info.modelName = model::modelSpecFromJson(s.columnText(4)).name;
    } catch (const Error &) {
        info.modelName = "?";
    }
    info.bytes = s.columnInt(5);
    return info;
}

} // namespace

CheckpointStore::CheckpointStore(const std::filesystem::path &databasePath)
    : m_path(databasePath)
    , m_db(std::make_unique<Database>(openRookeryDatabase(databasePath)))
{ }

CheckpointStore::~CheckpointStore() = default;

int64_t CheckpointStore::save(const std::string &run, const train::TrainingState &state, int keepNewest)
{
    if (keepNewest < 1)
        throw Error("must keep at least one checkpoint");
    std::lock_guard lock(m_mutex);
    Transaction tx(*m_db);
    m_db->prepare("INSERT INTO checkpoints (run, step, created_at, model_spec, optimizer, batch_size, seed, "
                  "data_epoch, data_offset, rng_state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
        .bind(1, std::string_view(run))
        .bind(2, state.step)
        .bind(3, nowMs())
        .bind(4, std::string_view(model::toJson(state.model)))
        .bind(5, std::string_view(train::toJson(state.optimizer)))
        .bind(6, state.batchSize)
        .bind(7, int64_t(state.seed))
        .bind(8, state.cursor.epoch)
        .bind(9, state.cursor.offset)
        .bindBlob(10, state.rngState)
        .run();
    const int64_t id = m_db->lastInsertRowId();
    insertTensors(*m_db, id, kParameter, state.parameters);
    insertTensors(*m_db, id, kOptimizer, state.optimizerState);
    m_db->prepare("DELETE FROM checkpoints WHERE run = ?1 AND id NOT IN "
                  "(SELECT id FROM checkpoints WHERE run = ?1 ORDER BY step DESC, id DESC LIMIT ?2)")
        .bind(1, std::string_view(run))
        .bind(2, int64_t(keepNewest))
        .run();
    tx.commit();
    return id;
}

std::optional<Checkpoint> CheckpointStore::loadNewest(const std::string &run)
{
    std::lock_guard lock(m_mutex);
    Statement s = m_db->prepare("SELECT id FROM checkpoints WHERE run = ? ORDER BY step DESC, id DESC LIMIT 1");
    s.bind(1, std::string_view(run));
    if (!s.step())
        return std::nullopt;
    return loadLocked(s.columnInt(0));
}

Checkpoint CheckpointStore::load(int64_t id)
{
    std::lock_guard lock(m_mutex);
    return loadLocked(id);
}

Checkpoint CheckpointStore::loadLocked(int64_t id)
{
    Checkpoint cp;
    {
        Statement s = m_db->prepare(std::string(kInfoColumns) + "WHERE c.id = ?");
        s.bind(1, id);
        if (!s.step())
            throw Error("no checkpoint " + std::to_string(id) + " in " + m_path.string());
        cp.info = readInfo(s);
    }
    Statement s = m_db->prepare("SELECT model_spec, optimizer, batch_size, seed, step, data_epoch, data_offset, "
                                "rng_state FROM checkpoints WHERE id = ?");
    s.bind(1, id);
    s.step();
    auto &st = cp.state;
    st.model = model::modelSpecFromJson(s.columnText(0));
    st.optimizer = train::optimizerConfigFromJson(s.columnText(1));
    st.batchSize = s.columnInt(2);
    st.seed = uint64_t(s.columnInt(3));
    st.step = s.columnInt(4);
    st.cursor = {s.columnInt(5), s.columnInt(6)};
    auto rng = s.columnBlob(7);
    st.rngState.assign(rng.begin(), rng.end());

    Statement t = m_db->prepare("SELECT kind, name, dtype, shape, data FROM checkpoint_tensors WHERE checkpoint_id "
                                "= ? ORDER BY kind, position");
    t.bind(1, id);
    while (t.step()) {
        NamedTensor nt;
        nt.name = t.columnText(1);
        nt.dtype = dtypeFromCode(int(t.columnInt(2)));
        nt.shape = shapeFromText(t.columnText(3));
        auto blob = t.columnBlob(4);
        nt.data.assign(blob.begin(), blob.end());
        if (nt.data.size() != size_t(nt.elements()) * dtypeSize(nt.dtype))
            throw Error("checkpoint " + std::to_string(id) + ": tensor '" + nt.name + "' has the wrong size");
        (t.columnInt(0) == kParameter ? st.parameters : st.optimizerState).push_back(std::move(nt));
    }
    return cp;
}

std::vector<CheckpointInfo> CheckpointStore::list(const std::string &run)
{
    std::lock_guard lock(m_mutex);
    Statement s = m_db->prepare(std::string(kInfoColumns) + (run.empty() ? "WHERE ?1 = ?1 " : "WHERE c.run = ?1 ") +
                                "ORDER BY c.created_at DESC, c.id DESC");
    s.bind(1, std::string_view(run));
    std::vector<CheckpointInfo> out;
    while (s.step())
        out.push_back(readInfo(s));
    return out;
}

bool CheckpointStore::remove(int64_t id)
{
    std::lock_guard lock(m_mutex);
    Transaction tx(*m_db);
    m_db->prepare("DELETE FROM checkpoints WHERE id = ?").bind(1, id).run();
    const bool removed = m_db->changes() > 0;
    tx.commit();
    return removed;
}

} // namespace rookery::store

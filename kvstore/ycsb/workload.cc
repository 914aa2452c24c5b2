// Copyright 2026 The rfrpc Authors.

#include "kvstore/ycsb/workload.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/mutex.h"
#include "glog/logging.h"

namespace rfrpc {
namespace ycsb {

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {

// Prints the first failure of each operation and return code to stderr:
// the report's counts say how often ("[UPDATE], Return=BAD_REQUEST, 8"),
// this says why. Once per process, whatever the threads.
void NoteFirstFailure(absl::string_view op, absl::string_view return_name,
                      const absl::Status& status) {
  static Mutex mu;
  static auto* seen = new absl::flat_hash_set<std::string>;
  {
    MutexLock lock(&mu);
    if (!seen->insert(absl::StrCat(op, " ", return_name)).second) return;
  }
  std::fprintf(stderr, "ycsb: first %s that failed (%s): %s\n",
               std::string(op).c_str(), std::string(return_name).c_str(),
               status.ToString().c_str());
}

}  // namespace

void RecordCall(Measurements* measurements, absl::string_view op,
                const absl::Status& status, int64_t latency_ns) {
  if (status.ok()) {
    measurements->Record(op, latency_ns, op, YcsbReturnName(status));
    if (measurements->unavailable_since_ns() != 0) {
      measurements->set_unavailable_since_ns(0);
    }
  } else {
    const absl::string_view name = YcsbReturnName(status);
    measurements->Record(absl::StrCat(op, "-FAILED"), latency_ns, op, name);
    NoteFirstFailure(op, name, status);
    if (name == "NOT_IMPLEMENTED" && op != "SCAN") {
      measurements->set_unsupported();
    }
    if (name != "SERVICE_UNAVAILABLE") {
      // The database answered (NOT_FOUND, BAD_REQUEST, ...).
      measurements->set_unavailable_since_ns(0);
    } else if (measurements->unavailable_since_ns() == 0) {
      measurements->set_unavailable_since_ns(NowNanos() - latency_ns);
    }
  }
}

void MeasuredDb::Note(absl::string_view op, const absl::Status& status,
                      int64_t start_ns) {
  RecordCall(measurements_, op, status, NowNanos() - start_ns);
}

absl::Status MeasuredDb::Cleanup() {
  const int64_t start = NowNanos();
  absl::Status s = db_->Cleanup();
  // Java YCSB measures CLEANUP without a return code.
  measurements_->Measure(s.ok() ? "CLEANUP" : "CLEANUP-FAILED",
                         NowNanos() - start);
  return s;
}

absl::Status MeasuredDb::Read(absl::string_view table, absl::string_view key,
                              const std::vector<std::string>* fields,
                              Record* result) {
  const int64_t start = NowNanos();
  absl::Status s = db_->Read(table, key, fields, result);
  Note("READ", s, start);
  return s;
}

absl::Status MeasuredDb::Scan(absl::string_view table,
                              absl::string_view start_key, int64_t count,
                              const std::vector<std::string>* fields,
                              std::vector<Record>* result) {
  const int64_t start = NowNanos();
  absl::Status s = db_->Scan(table, start_key, count, fields, result);
  Note("SCAN", s, start);
  return s;
}

absl::Status MeasuredDb::Update(absl::string_view table, absl::string_view key,
                                const Record& values) {
  const int64_t start = NowNanos();
  absl::Status s = db_->Update(table, key, values);
  Note("UPDATE", s, start);
  return s;
}

absl::Status MeasuredDb::Insert(absl::string_view table, absl::string_view key,
                                const Record& values) {
  const int64_t start = NowNanos();
  absl::Status s = db_->Insert(table, key, values);
  Note("INSERT", s, start);
  return s;
}

absl::Status MeasuredDb::Delete(absl::string_view table,
                                absl::string_view key) {
  const int64_t start = NowNanos();
  absl::Status s = db_->Delete(table, key);
  Note("DELETE", s, start);
  return s;
}

absl::Status CoreWorkload::CheckSpec(const WorkloadSpec& spec) {
  if (spec.recordcount < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "recordcount: must be at least 1, got ", spec.recordcount));
  }
  if (spec.insertcount < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("insertcount: must be at least 1, got ", spec.insertcount,
                     " (insertstart ", spec.insertstart, ", recordcount ",
                     spec.recordcount, ")"));
  }
  // ParseWorkloadSpec refuses these too; a spec built in code is checked
  // here, before the casts to int in the constructor.
  if (spec.zeropadding < 0 || spec.zeropadding > kMaxZeroPadding) {
    return absl::InvalidArgumentError(
        absl::StrCat("zeropadding ", spec.zeropadding, " is outside [0, ",
                     kMaxZeroPadding, "]"));
  }
  if (spec.keylength < 0 || spec.keylength > kMaxKeyLength) {
    return absl::InvalidArgumentError(absl::StrCat(
        "keylength ", spec.keylength, " is outside [0, ", kMaxKeyLength, "]"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CoreWorkload>> CoreWorkload::Create(
    const WorkloadSpec& spec) {
  if (absl::Status s = CheckSpec(spec); !s.ok()) return s;
  return std::unique_ptr<CoreWorkload>(new CoreWorkload(spec));
}

CoreWorkload::CoreWorkload(const WorkloadSpec& spec) : spec_(spec) {
  key_format_.hashed = spec.hashed_inserts;
  key_format_.zeropadding = static_cast<int>(spec.zeropadding);
  key_format_.keylength = static_cast<int>(spec.keylength);

  for (int64_t i = 0; i < spec.fieldcount; ++i) {
    field_names_.push_back(absl::StrCat(spec.fieldnameprefix, i));
  }
  switch (spec.fieldlengthdistribution) {
    case Distribution::kUniform:
      field_length_ =
          std::make_unique<UniformLong>(spec.minfieldlength, spec.fieldlength);
      break;
    case Distribution::kZipfian:
      field_length_ =
          std::make_unique<Zipfian>(spec.minfieldlength, spec.fieldlength);
      break;
    default:
      field_length_ = std::make_unique<ConstantGenerator>(spec.fieldlength);
  }
  field_chooser_ = std::make_unique<UniformLong>(0, spec.fieldcount - 1);
  if (spec.scanlengthdistribution == Distribution::kZipfian) {
    scan_length_ =
        std::make_unique<Zipfian>(spec.minscanlength, spec.maxscanlength);
  } else {
    scan_length_ =
        std::make_unique<UniformLong>(spec.minscanlength, spec.maxscanlength);
  }

  // Java adds only positive proportions, in this order.
  const std::pair<double, Operation> ops[] = {
      {spec.readproportion, Operation::kRead},
      {spec.updateproportion, Operation::kUpdate},
      {spec.insertproportion, Operation::kInsert},
      {spec.scanproportion, Operation::kScan},
      {spec.readmodifywriteproportion, Operation::kReadModifyWrite},
  };
  for (const auto& [weight, op] : ops) {
    if (weight > 0) operation_chooser_.Add(weight, static_cast<int>(op));
  }

  key_sequence_ = std::make_unique<Counter>(spec.insertstart);
  transaction_insert_sequence_ =
      std::make_unique<AcknowledgedCounter>(spec.recordcount);
  const int64_t lb = spec.insertstart;
  const int64_t ub = spec.insertstart + spec.insertcount - 1;
  switch (spec.requestdistribution) {
    case Distribution::kExponential:
      exponential_ = std::make_unique<Exponential>(
          spec.exponential_percentile,
          static_cast<double>(spec.recordcount) * spec.exponential_frac);
      break;
    case Distribution::kSequential:
      key_chooser_ = std::make_unique<Sequential>(lb, ub);
      break;
    case Distribution::kZipfian: {
      // Room for the keys the run phase inserts, so the popular keys stay
      // popular as the key space grows (Java's 2x fudge factor).
      const int64_t expected_new_keys = static_cast<int64_t>(
          static_cast<double>(spec.operationcount) * spec.insertproportion *
          2.0);
      key_chooser_ = std::make_unique<ScrambledZipfian>(
          lb, ub + 1 + expected_new_keys, spec.zipfianconstant);
      break;
    }
    case Distribution::kLatest:
      break;  // Per thread.
    case Distribution::kHotspot:
      key_chooser_ = std::make_unique<Hotspot>(
          lb, ub, spec.hotspotdatafraction, spec.hotspotopnfraction);
      break;
    default:
      key_chooser_ = std::make_unique<UniformLong>(lb, ub);
  }
}

CoreWorkload::ThreadState CoreWorkload::NewThreadState(uint64_t seed) const {
  ThreadState state;
  state.rng.seed(seed);
  if (spec_.requestdistribution == Distribution::kLatest) {
    state.latest =
        std::make_unique<SkewedLatest>(transaction_insert_sequence_.get());
  }
  return state;
}

std::string CoreWorkload::BuildKeyName(int64_t keynum) const {
  return ycsb::BuildKeyName(keynum, key_format_);
}

void CoreWorkload::BuildKeyName(int64_t keynum, std::string* key) const {
  ycsb::BuildKeyName(keynum, key_format_, key);
}

std::string CoreWorkload::BuildDeterministicValue(
    absl::string_view key, absl::string_view field) const {
  // Java: sb = key + ":" + field; while (sb.length() < size)
  // sb.append(':').append(sb.toString().hashCode()); sb.setLength(size).
  // The running hash equals hashCode() of everything appended so far.
  const size_t size = static_cast<size_t>(spec_.fieldlength);
  std::string value = absl::StrCat(key, ":", field);
  uint32_t hash = 0;
  for (unsigned char c : value) hash = 31 * hash + c;
  while (value.size() < size) {
    std::string piece =
        absl::StrCat(":", static_cast<int32_t>(hash));
    for (unsigned char c : piece) hash = 31 * hash + c;
    value += piece;
  }
  value.resize(size);
  return value;
}

std::string CoreWorkload::RandomValue(ThreadState& state) const {
  const int64_t length = field_length_->Next(state.rng);
  std::string value(static_cast<size_t>(std::max<int64_t>(length, 0)), ' ');
  // Printable ASCII ('!' .. '~'), eight characters per 64-bit draw.
  for (size_t i = 0; i < value.size(); i += 8) {
    uint64_t bits = state.rng();
    for (size_t j = i; j < std::min(value.size(), i + 8); ++j) {
      value[j] = static_cast<char>('!' + (bits & 0xff) % 94);
      bits >>= 8;
    }
  }
  return value;
}

std::string CoreWorkload::FieldValue(absl::string_view key,
                                     absl::string_view field,
                                     ThreadState& state) const {
  return spec_.dataintegrity ? BuildDeterministicValue(key, field)
                             : RandomValue(state);
}

Record CoreWorkload::BuildValues(absl::string_view key,
                                 ThreadState& state) const {
  Record values;
  values.reserve(field_names_.size());
  for (const std::string& field : field_names_) {
    values.push_back({field, FieldValue(key, field, state)});
  }
  return values;
}

Record CoreWorkload::BuildSingleValue(absl::string_view key,
                                      ThreadState& state) const {
  const std::string& field = field_names_[field_chooser_->Next(state.rng)];
  return Record{{field, FieldValue(key, field, state)}};
}

Operation CoreWorkload::NextOperation(ThreadState& state) const {
  return static_cast<Operation>(operation_chooser_.Next(state.rng));
}

int64_t CoreWorkload::NextKeynum(ThreadState& state) const {
  int64_t keynum;
  if (exponential_ != nullptr) {
    do {
      keynum =
          transaction_insert_sequence_->Last() - exponential_->Next(state.rng);
    } while (keynum < 0);
    return keynum;
  }
  NumberGenerator* chooser =
      state.latest != nullptr ? state.latest.get() : key_chooser_.get();
  do {
    keynum = chooser->Next(state.rng);
  } while (keynum > transaction_insert_sequence_->Last());
  return keynum;
}

const std::vector<std::string>* CoreWorkload::ReadFields(
    ThreadState& state, std::vector<std::string>* storage) const {
  if (!spec_.readallfields) {
    storage->assign(1, field_names_[field_chooser_->Next(state.rng)]);
    return storage;
  }
  // Java passes the full list when verifying; null means the same here.
  return nullptr;
}

void CoreWorkload::VerifyRow(absl::string_view key,
                             const std::vector<std::string>* fields,
                             const absl::Status& read_status,
                             const Record& cells,
                             Measurements* measurements) const {
  const int64_t start = NowNanos();
  absl::string_view verdict = "OK";
  if (!read_status.ok() || cells.empty()) {
    verdict = "ERROR";  // No data where some was expected.
  } else {
    const size_t expected = fields == nullptr ? field_names_.size()
                                              : fields->size();
    if (cells.size() != expected) verdict = "UNEXPECTED_STATE";
    for (const Field& cell : cells) {
      if (cell.value != BuildDeterministicValue(key, cell.name)) {
        verdict = "UNEXPECTED_STATE";
        break;
      }
    }
  }
  measurements->Measure("VERIFY", NowNanos() - start);
  measurements->ReportReturn("VERIFY", verdict);
}

absl::Status CoreWorkload::DoInsert(MeasuredDb& db, ThreadState& state) const {
  const int64_t keynum = key_sequence_->Next();
  const std::string key = BuildKeyName(keynum);
  const Record values = BuildValues(key, state);
  absl::Status status;
  for (int64_t attempt = 0;; ++attempt) {
    status = db.Insert(spec_.table, key, values);
    if (status.ok() || attempt >= spec_.insertion_retry_limit) break;
    // Sleep 0.8 to 1.2 times the retry interval, as Java does.
    const double factor = 0.8 + 0.4 * NextUnitDouble(state.rng);
    LOG(WARNING) << "retrying insert of " << key << " (attempt "
                 << attempt + 1 << "): " << status;
    std::this_thread::sleep_for(std::chrono::duration<double>(
        factor * static_cast<double>(spec_.insertion_retry_interval)));
  }
  return status;
}

absl::Status CoreWorkload::DoTransaction(MeasuredDb& db,
                                         ThreadState& state) const {
  switch (NextOperation(state)) {
    case Operation::kRead:
      DoRead(db, state);
      break;
    case Operation::kUpdate:
      DoUpdate(db, state);
      break;
    case Operation::kInsert:
      return DoTransactionInsert(db, state);
    case Operation::kScan:
      DoScan(db, state);
      break;
    case Operation::kReadModifyWrite:
      DoReadModifyWrite(db, state);
      break;
  }
  return absl::OkStatus();
}

void CoreWorkload::DoRead(MeasuredDb& db, ThreadState& state) const {
  BuildKeyName(NextKeynum(state), &state.key);
  const std::vector<std::string>* fields =
      ReadFields(state, &state.field_storage);
  absl::Status s = db.Read(spec_.table, state.key, fields, &state.cells);
  if (spec_.dataintegrity) {
    VerifyRow(state.key, fields, s, state.cells, db.measurements());
  }
}

void CoreWorkload::DoUpdate(MeasuredDb& db, ThreadState& state) const {
  const std::string key = BuildKeyName(NextKeynum(state));
  const Record values = spec_.writeallfields ? BuildValues(key, state)
                                             : BuildSingleValue(key, state);
  db.Update(spec_.table, key, values).IgnoreError();  // Counted by db.
}

absl::Status CoreWorkload::DoTransactionInsert(MeasuredDb& db,
                                               ThreadState& state) const {
  const int64_t keynum = transaction_insert_sequence_->Next();
  const std::string key = BuildKeyName(keynum);
  db.Insert(spec_.table, key, BuildValues(key, state)).IgnoreError();
  // Acknowledged even if the insert failed, as Java does, so readers move on.
  return transaction_insert_sequence_->Acknowledge(keynum);
}

void CoreWorkload::DoScan(MeasuredDb& db, ThreadState& state) const {
  const std::string start_key = BuildKeyName(NextKeynum(state));
  const int64_t length = scan_length_->Next(state.rng);
  std::vector<std::string> storage;
  const std::vector<std::string>* fields = nullptr;
  if (!spec_.readallfields) fields = ReadFields(state, &storage);
  std::vector<Record> result;
  db.Scan(spec_.table, start_key, length, fields, &result).IgnoreError();
}

void CoreWorkload::DoReadModifyWrite(MeasuredDb& db,
                                     ThreadState& state) const {
  const std::string key = BuildKeyName(NextKeynum(state));
  std::vector<std::string> storage;
  const std::vector<std::string>* fields = ReadFields(state, &storage);
  const Record values = spec_.writeallfields ? BuildValues(key, state)
                                             : BuildSingleValue(key, state);
  Record cells;
  const int64_t start = NowNanos();
  absl::Status read_status = db.Read(spec_.table, key, fields, &cells);
  db.Update(spec_.table, key, values).IgnoreError();
  const int64_t latency = NowNanos() - start;
  if (spec_.dataintegrity) {
    VerifyRow(key, fields, read_status, cells, db.measurements());
  }
  db.measurements()->Measure("READ-MODIFY-WRITE", latency);
}

void CoreWorkload::NextTransaction(ThreadState& state, PendingOp* op) const {
  // The draws of DoRead, DoUpdate, ... in the same order.
  op->op = NextOperation(state);
  op->step = 0;
  op->fields = nullptr;
  op->values.clear();
  op->cells.clear();
  switch (op->op) {
    case Operation::kRead:
      op->key = BuildKeyName(NextKeynum(state));
      op->fields = ReadFields(state, &op->field_storage);
      break;
    case Operation::kUpdate:
      op->key = BuildKeyName(NextKeynum(state));
      op->values = spec_.writeallfields ? BuildValues(op->key, state)
                                        : BuildSingleValue(op->key, state);
      break;
    case Operation::kInsert:
      op->keynum = transaction_insert_sequence_->Next();
      op->key = BuildKeyName(op->keynum);
      op->values = BuildValues(op->key, state);
      break;
    case Operation::kScan:
      op->key = BuildKeyName(NextKeynum(state));
      op->scan_length = scan_length_->Next(state.rng);
      if (!spec_.readallfields) {
        op->fields = ReadFields(state, &op->field_storage);
      }
      break;
    case Operation::kReadModifyWrite:
      op->key = BuildKeyName(NextKeynum(state));
      op->fields = ReadFields(state, &op->field_storage);
      op->values = spec_.writeallfields ? BuildValues(op->key, state)
                                        : BuildSingleValue(op->key, state);
      break;
  }
}

void CoreWorkload::StartStep(DB* db, PendingOp* op,
                             std::function<void()> done) const {
  op->step_start_ns = NowNanos();
  if (op->step == 0) op->op_start_ns = op->step_start_ns;
  DB::Done finish = [op, done = std::move(done)](absl::Status s) {
    op->end_ns = NowNanos();
    op->status = std::move(s);
    done();
  };
  const std::string& table = spec_.table;
  switch (op->op) {
    case Operation::kRead:
      db->ReadAsync(table, op->key, op->fields, &op->cells, std::move(finish));
      break;
    case Operation::kUpdate:
      db->UpdateAsync(table, op->key, op->values, std::move(finish));
      break;
    case Operation::kInsert:
      db->InsertAsync(table, op->key, op->values, std::move(finish));
      break;
    case Operation::kScan: {
      std::vector<Record> result;
      finish(db->Scan(table, op->key, op->scan_length, op->fields, &result));
      break;
    }
    case Operation::kReadModifyWrite:
      if (op->step == 0) {
        db->ReadAsync(table, op->key, op->fields, &op->cells,
                      std::move(finish));
      } else {
        db->UpdateAsync(table, op->key, op->values, std::move(finish));
      }
      break;
  }
}

absl::StatusOr<bool> CoreWorkload::FinishStep(
    PendingOp* op, Measurements* measurements) const {
  const int64_t latency = op->end_ns - op->step_start_ns;
  switch (op->op) {
    case Operation::kRead:
      RecordCall(measurements, "READ", op->status, latency);
      if (spec_.dataintegrity) {
        VerifyRow(op->key, op->fields, op->status, op->cells, measurements);
      }
      return true;
    case Operation::kUpdate:
      RecordCall(measurements, "UPDATE", op->status, latency);
      return true;
    case Operation::kInsert: {
      RecordCall(measurements, "INSERT", op->status, latency);
      // Acknowledged even if the insert failed, as DoTransactionInsert.
      absl::Status s = transaction_insert_sequence_->Acknowledge(op->keynum);
      if (!s.ok()) return s;
      return true;
    }
    case Operation::kScan:
      RecordCall(measurements, "SCAN", op->status, latency);
      return true;
    case Operation::kReadModifyWrite:
      if (op->step == 0) {
        RecordCall(measurements, "READ", op->status, latency);
        op->read_status = op->status;
        op->step = 1;
        return false;
      }
      RecordCall(measurements, "UPDATE", op->status, latency);
      if (spec_.dataintegrity) {
        VerifyRow(op->key, op->fields, op->read_status, op->cells,
                  measurements);
      }
      measurements->Measure("READ-MODIFY-WRITE", op->end_ns - op->op_start_ns);
      return true;
  }
  return true;
}

}  // namespace ycsb
}  // namespace rfrpc

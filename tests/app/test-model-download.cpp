// Downloads from a Hugging Face Hub the test starts on 127.0.0.1 (tests/app/fake-hub.h): a whole model into
// the cache's layout, resumption after a dropped connection (in the same pull and in a later one), checksum
// failures, 401/403/404, retries, offline mode, reuse of the cache without a request, two pulls at once,
// cancellation, and folio-cli's model commands against the same server.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <thread>

#include "app/hub/hub-cache.h"
#include "app/hub/hub-client.h"
#include "app/hub/hub-settings.h"
#include "app/hub/model-download.h"
#include "app/hub/model-locator.h"
#include "fake-hub.h"
#include "safetensors-writer.h"
#include "temp-dir.h"

namespace folio::hub {
namespace {

namespace fs = std::filesystem;
using test::FakeFile;
using test::FakeHub;
using test::FakeRepo;
using test::noise;
using test::TempDir;

constexpr const char* kRepo = "folio-test/tiny-ocr";
constexpr const char* kCommit = "0123456789abcdef0123456789abcdef01234567";

std::string weights_image() {
    std::vector<float> values(64 * 1024);
    for (size_t i = 0; i < values.size(); ++i) {
        values[i] = static_cast<float>(i % 977) * 0.25f;
    }
    return test::safetensors_image(
        {test::make_tensor("model.embed_tokens.weight", "F32", {64, 1024}, values)});
}

FakeRepo tiny_repo(std::optional<std::string> token = std::nullopt) {
    FakeRepo repo;
    repo.id = kRepo;
    repo.commit = kCommit;
    repo.token = std::move(token);
    repo.files = {
        {"config.json",
         R"({"model_type": "paddleocr_vl", "architectures": ["PaddleOCRVLForConditionalGeneration"]})",
         false},
        {"preprocessor_config.json", R"({"patch_size": 14, "merge_size": 2})", false},
        {"tokenizer_config.json", R"({"add_bos_token": false})", false},
        {"tokenizer.model", noise(20000, 7), true},
        {"model.safetensors", weights_image(), true},
        {"README.md", "# a tiny model\n", false},
        {"PP-DocLayoutV2/inference.pdiparams", noise(5000, 9), true},
        {"PP-DocLayoutV2/inference.yml", "mode: paddle\n", false},
    };
    return repo;
}

// The files Folio fetches of tiny_repo.
const std::vector<std::string> kWanted = {"config.json", "model.safetensors", "preprocessor_config.json",
                                          "tokenizer.model", "tokenizer_config.json"};

const FakeFile& file_of(const FakeRepo& repo, const std::string& path) {
    for (const FakeFile& file : repo.files) {
        if (file.path == path) {
            return file;
        }
    }
    throw std::runtime_error("no file " + path);
}

std::string read_all(const fs::path& path) {
    return read_file(path).value_or("");
}

template <typename F>
HubError expect_hub_error(F&& f, HubErrorKind kind, const std::string& fragment) {
    try {
        f();
    } catch (const HubError& e) {
        EXPECT_EQ(hub_error_kind_name(e.kind()), std::string(hub_error_kind_name(kind))) << e.what();
        EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
        return e;
    }
    ADD_FAILURE() << "no HubError (expected " << hub_error_kind_name(kind) << ": " << fragment << ")";
    return HubError(HubErrorKind::Failed, "");
}

class ModelDownloadTest : public ::testing::Test {
protected:
    void SetUp() override { hub_.add_repo(repo_); }

    HubSettings settings() const {
        HubSettings s;
        s.endpoint = hub_.endpoint();
        s.cache_dir = dir_ / "hub";
        s.models_dir = dir_ / "models";
        s.token_path = dir_ / "token";
        return s;
    }
    static ClientOptions fast() {
        ClientOptions options;
        options.connect_timeout = std::chrono::seconds(5);
        options.stall_timeout = std::chrono::seconds(5);
        options.retry_delay = std::chrono::milliseconds(5);
        options.max_retry_delay = std::chrono::milliseconds(20);
        return options;
    }
    PullResult pull(const HubSettings& s, const PullOptions& options = {}) const {
        return ModelDownloader(s, fast()).pull(kRepo, options);
    }
    HubCache cache() const { return HubCache(dir_ / "hub"); }

    size_t count_requests(const std::string& fragment) const {
        size_t n = 0;
        for (const test::RequestRecord& r : hub_.log()) {
            n += r.path.find(fragment) != std::string::npos ? 1 : 0;
        }
        return n;
    }
    std::vector<std::string> ranges_of(const std::string& fragment) const {
        std::vector<std::string> ranges;
        for (const test::RequestRecord& r : hub_.log()) {
            if (r.path.find(fragment) != std::string::npos) {
                ranges.push_back(r.range);
            }
        }
        return ranges;
    }

    // Every wanted file is a relative link to its blob with the repository's content; nothing else is there.
    void expect_complete_snapshot(const fs::path& snapshot) const {
        ASSERT_EQ(snapshot, cache().snapshot_dir(kRepo, kCommit));
        std::set<std::string> present;
        for (const auto& entry : fs::recursive_directory_iterator(snapshot)) {
            if (!entry.is_directory()) {
                present.insert(entry.path().lexically_relative(snapshot).generic_string());
            }
        }
        EXPECT_EQ(present, std::set<std::string>(kWanted.begin(), kWanted.end()));
        for (const std::string& path : kWanted) {
            const FakeFile& file = file_of(repo_, path);
            ASSERT_TRUE(fs::is_symlink(snapshot / path)) << path;
            EXPECT_EQ(fs::read_symlink(snapshot / path).string(), "../../blobs/" + file.etag()) << path;
            EXPECT_EQ(read_all(snapshot / path), file.content) << path;
        }
        for (const auto& entry : fs::directory_iterator(cache().repo_dir(kRepo) / "blobs")) {
            EXPECT_NE(entry.path().extension(), ".incomplete") << entry.path();
        }
    }

    FakeHub hub_;
    TempDir dir_;
    FakeRepo repo_ = tiny_repo();
};

TEST_F(ModelDownloadTest, DownloadsTheFilesFolioNeedsIntoTheCacheLayout) {
    std::vector<PullProgress> events;
    PullOptions options;
    options.progress_interval = std::chrono::milliseconds(0);
    options.on_progress = [&](const PullProgress& p) { events.push_back(p); };
    const PullResult result = pull(settings(), options);

    EXPECT_EQ(result.commit, kCommit);
    EXPECT_EQ(result.files_fetched, 5);
    EXPECT_EQ(result.files_cached, 0);
    EXPECT_TRUE(result.network);
    int64_t wanted_bytes = 0;
    for (const std::string& path : kWanted) {
        wanted_bytes += static_cast<int64_t>(file_of(repo_, path).content.size());
    }
    EXPECT_EQ(result.bytes_fetched, wanted_bytes);
    expect_complete_snapshot(result.snapshot);
    EXPECT_EQ(cache().read_ref(kRepo, "main"), kCommit);
    const auto tree = cache().read_tree(kRepo, kCommit);
    ASSERT_TRUE(tree);
    EXPECT_EQ(tree->size(), repo_.files.size());
    EXPECT_TRUE(fs::exists(dir_ / "hub" / "CACHEDIR.TAG"));
    EXPECT_TRUE(fs::exists(cache().lock_path(kRepo, file_of(repo_, "model.safetensors").sha256())));

    // The README and the Paddle inference folder stay on the Hub; LFS files come through the CDN redirect.
    EXPECT_EQ(count_requests("README.md"), 0u);
    EXPECT_EQ(count_requests("PP-DocLayoutV2"), 0u);
    EXPECT_EQ(count_requests("/cdn/"), 2u);
    EXPECT_EQ(count_requests("/revision/main"), 1u);
    EXPECT_EQ(count_requests("/tree/" + std::string(kCommit)), 1u);

    // Progress: every stage in order, bytes never past the total, the last download event complete.
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.front().stage, PullStage::Resolving);
    EXPECT_EQ(events.back().stage, PullStage::Done);
    int64_t last_done = 0;
    const PullProgress* last_download = nullptr;
    for (const PullProgress& p : events) {
        EXPECT_EQ(p.repo, kRepo);
        EXPECT_LE(p.bytes_done, p.bytes_total);
        if (p.stage == PullStage::Downloading) {
            EXPECT_GE(p.bytes_done, last_done);
            last_done = p.bytes_done;
            last_download = &p;
        }
    }
    ASSERT_NE(last_download, nullptr);
    EXPECT_EQ(last_download->bytes_done, wanted_bytes);
    EXPECT_EQ(last_download->bytes_total, wanted_bytes);
    EXPECT_EQ(last_download->files_done, 5);
    EXPECT_EQ(last_download->files_total, 5);
}

TEST_F(ModelDownloadTest, ListingPagesFollowTheLinkHeader) {
    hub_.set_tree_page_size(2);
    const PullResult result = pull(settings());
    expect_complete_snapshot(result.snapshot);
    EXPECT_EQ(count_requests("/tree/"), 5u);  // a folder and eight files, two a page
}

TEST_F(ModelDownloadTest, ADroppedConnectionResumesWithARangeRequest) {
    hub_.drop_after("model.safetensors", 100000);
    const PullResult result = pull(settings());
    expect_complete_snapshot(result.snapshot);
    const std::string sha = file_of(repo_, "model.safetensors").sha256();
    EXPECT_EQ(ranges_of("/cdn/" + sha), (std::vector<std::string>{"", "bytes=100000-"}));
}

TEST_F(ModelDownloadTest, AnInterruptedPullResumesFromItsIncompleteFile) {
    hub_.drop_after("model.safetensors", 100000, 1000);
    PullOptions options;
    options.file_attempts = 2;
    const HubError error = expect_hub_error([&] { pull(settings(), options); }, HubErrorKind::Transient,
                                            "model.safetensors of folio-test/tiny-ocr");
    EXPECT_NE(std::string(error.what()).find("gave up after 2 attempts at 100000 of"), std::string::npos);

    // A partial file never looks complete: only the .incomplete file holds the bytes so far.
    const std::string sha = file_of(repo_, "model.safetensors").sha256();
    EXPECT_FALSE(fs::exists(cache().blob_path(kRepo, sha)));
    EXPECT_EQ(fs::file_size(cache().incomplete_path(kRepo, sha)), 100000u);
    EXPECT_FALSE(cache().has_file(kRepo, kCommit, "model.safetensors"));
    EXPECT_FALSE(fs::exists(fs::symlink_status(cache().snapshot_file(kRepo, kCommit, "model.safetensors"))));
    // The other transfers stopped when it gave up: each of their files is either whole or not linked.
    int n_kept = 0;
    for (const std::string& path : kWanted) {
        if (path == "model.safetensors") {
            continue;
        }
        const bool linked = fs::exists(fs::symlink_status(cache().snapshot_file(kRepo, kCommit, path)));
        EXPECT_EQ(linked, cache().has_file(kRepo, kCommit, path)) << path;
        n_kept += linked ? 1 : 0;
    }
    LocateOptions locate;
    EXPECT_THROW(locate_model(kRepo, settings(), locate), Error);

    hub_.clear_faults();
    hub_.clear_log();
    const PullResult result = pull(settings());
    expect_complete_snapshot(result.snapshot);
    // The first pull stopped its other transfers when it gave up; what they finished stays.
    EXPECT_EQ(result.files_cached, n_kept);
    EXPECT_EQ(result.files_fetched, 5 - n_kept);
    EXPECT_EQ(ranges_of("/cdn/" + sha), std::vector<std::string>{"bytes=100000-"});
}

TEST_F(ModelDownloadTest, ACorruptedByteFailsTheChecksumAndTheFileIsRemoved) {
    hub_.corrupt("model.safetensors", 1234);
    const std::string sha = file_of(repo_, "model.safetensors").sha256();
    const HubError error = expect_hub_error([&] { pull(settings()); }, HubErrorKind::Checksum,
                                            "model.safetensors of folio-test/tiny-ocr: checksum mismatch");
    EXPECT_NE(std::string(error.what()).find("the Hub publishes " + sha), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("the damaged file was removed"), std::string::npos);
    EXPECT_FALSE(fs::exists(cache().blob_path(kRepo, sha)));
    EXPECT_FALSE(fs::exists(cache().incomplete_path(kRepo, sha)));
    EXPECT_FALSE(fs::exists(fs::symlink_status(cache().snapshot_file(kRepo, kCommit, "model.safetensors"))));
}

TEST_F(ModelDownloadTest, ASmallFileIsCheckedAgainstItsGitBlobId) {
    hub_.corrupt("config.json", 3);
    expect_hub_error([&] { pull(settings()); }, HubErrorKind::Checksum,
                     "config.json of folio-test/tiny-ocr: checksum mismatch: the git blob id");
    EXPECT_FALSE(fs::exists(cache().blob_path(kRepo, file_of(repo_, "config.json").oid())));
}

TEST_F(ModelDownloadTest, MissingRepositoryAndRevisionAreNotFound) {
    expect_hub_error([&] { ModelDownloader(settings(), fast()).pull("folio-test/no-such-model"); },
                     HubErrorKind::NotFound,
                     "folio-test/no-such-model: no such model repository on http://127.0.0.1");
    PullOptions options;
    options.revision = "v9";
    expect_hub_error([&] { pull(settings(), options); }, HubErrorKind::NotFound,
                     "folio-test/tiny-ocr: revision 'v9' not found");
    EXPECT_FALSE(fs::exists(cache().repo_dir("folio-test/no-such-model")));
}

TEST_F(ModelDownloadTest, AGatedModelNeedsItsToken) {
    repo_ = tiny_repo("hf_good");
    hub_.add_repo(repo_);
    expect_hub_error([&] { pull(settings()); }, HubErrorKind::Unauthorized,
                     "or it is private or gated and needs a token: set HF_TOKEN or save a token in " +
                         (dir_ / "token").string());

    HubSettings wrong = settings();
    wrong.token = "hf_bad";
    wrong.token_source = "HF_TOKEN";
    expect_hub_error([&] { pull(wrong); }, HubErrorKind::Unauthorized,
                     "the token from HF_TOKEN was not accepted");

    // The token file, as huggingface_hub reads it.
    std::ofstream(dir_ / "token") << "hf_good\n";
    const HubSettings from_file =
        hub_settings_from_environment([&](const char* name) -> std::optional<std::string> {
            if (std::string(name) == "HF_TOKEN_PATH") {
                return (dir_ / "token").string();
            }
            if (std::string(name) == "HF_HUB_CACHE") {
                return (dir_ / "hub").string();
            }
            if (std::string(name) == "HF_ENDPOINT") {
                return hub_.endpoint() + "/";
            }
            return std::nullopt;
        });
    ASSERT_EQ(from_file.token, "hf_good");
    EXPECT_EQ(from_file.endpoint, hub_.endpoint());
    hub_.clear_log();
    const PullResult result = pull(from_file);
    expect_complete_snapshot(result.snapshot);
    for (const test::RequestRecord& r : hub_.log()) {
        if (r.path.find("/api/") != std::string::npos || r.path.find("/resolve/") != std::string::npos) {
            EXPECT_EQ(r.authorization, "Bearer hf_good") << r.path;
        }
    }
}

TEST_F(ModelDownloadTest, ATokenWithoutAccessIsForbidden) {
    hub_.fail_requests("/revision/", 403, 1);
    expect_hub_error(
        [&] { pull(settings()); }, HubErrorKind::Forbidden,
        "answered 403 Forbidden (injected failure): the token has no access to this repository; a "
        "gated model needs its conditions accepted on " +
            hub_.endpoint() + "/folio-test/tiny-ocr");
    EXPECT_EQ(count_requests("/revision/"), 1u);  // not retried
}

TEST_F(ModelDownloadTest, TransientFailuresAreRetried) {
    hub_.fail_requests("/revision/", 503, 2);
    hub_.fail_requests("/resolve/main/config.json", 502, 1);
    const PullResult result = pull(settings());
    expect_complete_snapshot(result.snapshot);
    EXPECT_EQ(count_requests("/revision/"), 3u);
}

TEST_F(ModelDownloadTest, APersistentServerErrorGivesUp) {
    hub_.fail_requests("/cdn/", 500, 1000);
    PullOptions options;
    options.file_attempts = 3;
    expect_hub_error([&] { pull(settings(), options); }, HubErrorKind::Transient, "gave up after 3 attempts");
}

TEST_F(ModelDownloadTest, AHubThatCannotBeReachedSaysWhatToDo) {
    // A port nothing listens on: the connection is refused.
    HubSettings unreachable = settings();
    unreachable.endpoint = "http://127.0.0.1:9";
    PullOptions options;
    options.file_attempts = 1;
    ClientOptions client = fast();
    client.api_attempts = 1;
    expect_hub_error([&] { ModelDownloader(unreachable, client).pull(kRepo, options); },
                     HubErrorKind::Transient,
                     "no connection to the Hub: check the network or proxy, or set HF_ENDPOINT to a mirror");
}

TEST_F(ModelDownloadTest, OfflineModeNeverTouchesTheNetwork) {
    HubSettings offline = settings();
    offline.offline = true;
    expect_hub_error([&] { pull(offline); }, HubErrorKind::Offline,
                     "folio-test/tiny-ocr (revision main) is not in the Hugging Face cache at");
    EXPECT_EQ(hub_.n_requests(), 0u);

    pull(settings());
    hub_.clear_log();
    const PullResult result = pull(offline);
    EXPECT_FALSE(result.network);
    EXPECT_EQ(result.commit, kCommit);
    EXPECT_EQ(result.files_cached, 5);
    expect_complete_snapshot(result.snapshot);
    EXPECT_EQ(locate_model(kRepo, offline).dir, result.snapshot);
    EXPECT_EQ(hub_.n_requests(), 0u);

    // Offline with part of the model: the pull says what is missing.
    fs::remove(cache().snapshot_file(kRepo, kCommit, "tokenizer.model"));
    expect_hub_error([&] { pull(offline); }, HubErrorKind::Offline, "(missing: tokenizer.model)");
    EXPECT_EQ(hub_.n_requests(), 0u);
}

TEST_F(ModelDownloadTest, ACachedModelIsReusedWithoutARequest) {
    pull(settings());
    hub_.clear_log();

    // A commit whose files are all cached: nothing is asked.
    PullOptions at_commit;
    at_commit.revision = kCommit;
    PullResult result = pull(settings(), at_commit);
    EXPECT_FALSE(result.network);
    EXPECT_EQ(result.files_cached, 5);
    EXPECT_EQ(hub_.n_requests(), 0u);

    // Finding it by name (folio-cli generate --model ORG/NAME): nothing is asked either.
    const LocatedModel located = locate_model(kRepo, settings());
    EXPECT_EQ(located.dir, cache().snapshot_dir(kRepo, kCommit));
    EXPECT_EQ(located.source, ModelSource::HubCache);
    EXPECT_EQ(located.commit, kCommit);
    EXPECT_EQ(hub_.n_requests(), 0u);

    // A branch: one request for its commit, the listing from the cache, no file fetched.
    result = pull(settings());
    EXPECT_EQ(result.files_fetched, 0);
    EXPECT_EQ(result.files_cached, 5);
    EXPECT_EQ(hub_.n_requests(), 1u);

    // A snapshot another tool made (no saved listing) is judged by its files.
    fs::remove(cache().repo_dir(kRepo) / "trees" / (std::string(kCommit) + ".json"));
    hub_.clear_log();
    result = pull(settings(), at_commit);
    EXPECT_FALSE(result.network);
    EXPECT_EQ(hub_.n_requests(), 0u);
}

TEST_F(ModelDownloadTest, TwoPullsAtOnceShareTheWork) {
    hub_.set_chunk_delay(std::chrono::milliseconds(2));
    std::vector<PullResult> results(2);
    std::vector<std::string> errors(2);
    std::vector<std::thread> threads;
    for (int i = 0; i < 2; ++i) {
        threads.emplace_back([&, i] {
            try {
                results[static_cast<size_t>(i)] = pull(settings());
            } catch (const std::exception& e) {
                errors[static_cast<size_t>(i)] = e.what();
            }
        });
    }
    for (std::thread& thread : threads) {
        thread.join();
    }
    for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(errors[static_cast<size_t>(i)], "");
        expect_complete_snapshot(results[static_cast<size_t>(i)].snapshot);
    }
    // Each blob was fetched once: the second pull waited on its lock and found it done.
    EXPECT_EQ(count_requests("/cdn/" + file_of(repo_, "model.safetensors").sha256()), 1u);
    EXPECT_EQ(results[0].files_fetched + results[1].files_fetched, 5);
    size_t n_blobs = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator(cache().repo_dir(kRepo) / "blobs")) {
        ++n_blobs;
    }
    EXPECT_EQ(n_blobs, 5u);
}

TEST_F(ModelDownloadTest, ACancelledPullKeepsItsPartsAndResumesLater) {
    hub_.set_chunk_delay(std::chrono::milliseconds(2));
    PullOptions options;
    options.progress_interval = std::chrono::milliseconds(0);
    options.on_progress = [&options](const PullProgress& p) {
        if (p.stage == PullStage::Downloading && p.bytes_done > 30000) {
            options.cancel.cancel();
        }
    };
    expect_hub_error([&] { pull(settings(), options); }, HubErrorKind::Cancelled, "cancelled");
    const std::string sha = file_of(repo_, "model.safetensors").sha256();
    const auto kept = fs::file_size(cache().incomplete_path(kRepo, sha));
    EXPECT_GT(kept, 0u);
    EXPECT_FALSE(fs::exists(cache().blob_path(kRepo, sha)));

    hub_.set_chunk_delay(std::chrono::milliseconds(0));
    hub_.clear_log();
    const PullResult result = pull(settings());
    expect_complete_snapshot(result.snapshot);
    EXPECT_EQ(ranges_of("/cdn/" + sha), std::vector<std::string>{"bytes=" + std::to_string(kept) + "-"});
}

TEST_F(ModelDownloadTest, NotEnoughDiskSpaceIsSaidBeforeDownloading) {
    PullOptions options;
    options.free_space = [](const fs::path&) -> std::optional<int64_t> { return 1000; };
    expect_hub_error([&] { pull(settings(), options); }, HubErrorKind::DiskFull,
                     "folio-test/tiny-ocr needs 2");
    EXPECT_EQ(count_requests("/resolve/"), 0u);
}

TEST_F(ModelDownloadTest, APartLongerThanTheFileStartsOver) {
    // A part longer than the file is not this file's beginning: the pull starts the file over.
    const FakeFile& weights = file_of(repo_, "model.safetensors");
    fs::create_directories(cache().repo_dir(kRepo) / "blobs");
    std::ofstream(cache().incomplete_path(kRepo, weights.sha256()), std::ios::binary)
        << weights.content << "trailing bytes";
    const PullResult result = pull(settings());
    expect_complete_snapshot(result.snapshot);
    EXPECT_EQ(ranges_of("/cdn/" + weights.sha256()), std::vector<std::string>{""});
}

// folio-cli model pull / list / verify / rm against the same server.
#ifdef FOLIO_CLI_PATH
struct CliRun {
    int status = 0;
    std::string output;
};

class FolioCliTest : public ModelDownloadTest {
protected:
    // folio-cli with the arguments, the Hub and the cache set through the environment; its stdout and
    // stderr together.
    CliRun run(const std::string& args) const {
        const std::string env = "HF_ENDPOINT=" + hub_.endpoint() +
                                " HF_HUB_CACHE=" + (dir_ / "hub").string() +
                                " XDG_DATA_HOME=" + (dir_ / "data").string() +
                                " HF_TOKEN_PATH=" + (dir_ / "token").string() + " HF_TOKEN= HF_HUB_OFFLINE= ";
        const fs::path out = dir_ / "cli-output.txt";
        const int raw =
            std::system((env + FOLIO_CLI_PATH + " " + args + " >" + out.string() + " 2>&1").c_str());
        return CliRun{WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, read_all(out)};
    }
};

TEST_F(FolioCliTest, ModelCommands) {
    CliRun r = run("model pull folio-test/tiny-ocr");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("folio-test/tiny-ocr: model.safetensors ("), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(" (5/5 files, "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("5 files fetched"), std::string::npos) << r.output;

    r = run("model list");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("folio-test/tiny-ocr"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("main"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("recognition  ok"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("PaddlePaddle/PaddleOCR-VL (PaddleOCR-VL 0.9B"), std::string::npos) << r.output;

    r = run("model verify folio-test/tiny-ocr");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("ok, recognition model, 5 files"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("5 hashes checked"), std::string::npos) << r.output;

    // A damaged blob: verify names the file; a quick verify (sizes and headers only) passes it.
    const fs::path blob = cache().blob_path(kRepo, file_of(repo_, "tokenizer.model").sha256());
    {
        std::fstream f(blob, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(10);
        f.put('!');
    }
    r = run("model verify folio-test/tiny-ocr");
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_NE(r.output.find("tokenizer.model is damaged: its sha256 is"), std::string::npos) << r.output;
    EXPECT_NE(
        r.output.find("Remove the damaged files with: folio-cli model verify folio-test/tiny-ocr --repair"),
        std::string::npos)
        << r.output;
    EXPECT_EQ(run("model verify folio-test/tiny-ocr --quick").status, 0);
    r = run("model verify folio-test/tiny-ocr --repair");
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_NE(
        r.output.find(
            "Removed 1 damaged file.\nFetch what is missing with: folio-cli model pull folio-test/tiny-ocr"),
        std::string::npos)
        << r.output;
    EXPECT_FALSE(fs::exists(blob));
    r = run("model pull folio-test/tiny-ocr");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("1 file fetched (20.0 KB), 4 already cached"), std::string::npos) << r.output;
    EXPECT_EQ(run("model verify folio-test/tiny-ocr").status, 0);

    r = run("generate --model folio-test/missing-model --prompt OCR:");
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_NE(r.output.find("folio-test/missing-model is not on this computer"), std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("folio-cli model pull folio-test/missing-model"), std::string::npos) << r.output;

    r = run("model pull folio-test/no-such-model");
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_NE(r.output.find("folio-cli model: error: folio-test/no-such-model: no such model repository"),
              std::string::npos)
        << r.output;

    r = run("model rm folio-test/tiny-ocr");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("Removed folio-test/tiny-ocr"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(cache().repo_dir(kRepo)));
}

// A catalogue model comes with the layout model it pairs with, and generate runs it by its name.
TEST_F(FolioCliTest, PullsACatalogueModelWithItsLayoutAndRunsItByName) {
    FakeRepo ocr;
    ocr.id = "PaddlePaddle/PaddleOCR-VL";
    ocr.commit = std::string(40, 'e');
    const fs::path fixture = fs::path(FOLIO_FIXTURES_DIR) / "paddleocr-vl-tiny";
    for (const auto& entry : fs::directory_iterator(fixture)) {
        const std::string name = entry.path().filename().string();
        ocr.files.push_back(
            {name, read_all(entry.path()), name == "model.safetensors" || name == "tokenizer.model"});
    }
    ocr.files.push_back({"PP-DocLayoutV2/inference.pdiparams", noise(3000, 3), true});
    ocr.files.push_back({"README.md", "# PaddleOCR-VL\n", false});
    FakeRepo layout;
    layout.id = "PaddlePaddle/PP-DocLayoutV2_safetensors";
    layout.commit = std::string(40, 'f');
    layout.files = {
        {"config.json",
         R"({"model_type": "pp_doclayout_v2", "architectures": ["PPDocLayoutV2ForObjectDetection"]})", false},
        {"preprocessor_config.json", R"({"size": {"height": 800, "width": 800}})", false},
        {"model.safetensors", weights_image(), true},
    };
    hub_.add_repo(ocr);
    hub_.add_repo(layout);

    CliRun r = run("model pull PaddlePaddle/PaddleOCR-VL --no-layout");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("PaddlePaddle/PaddleOCR-VL (PaddleOCR-VL 0.9B): 8 files fetched"),
              std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("PP-DocLayoutV2_safetensors"), std::string::npos) << r.output;
    EXPECT_EQ(count_requests("PP-DocLayoutV2/"), 0u);

    r = run("model pull paddlepaddle/paddleocr-vl");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("PaddlePaddle/PaddleOCR-VL (PaddleOCR-VL 0.9B): up to date (8 files cached)"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("PaddlePaddle/PP-DocLayoutV2_safetensors (PP-DocLayoutV2): 3 files fetched"),
              std::string::npos)
        << r.output;

    r = run("model list");
    EXPECT_NE(r.output.find("layout       ok"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("Not downloaded"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("  PaddlePaddle/PaddleOCR-VL (PaddleOCR-VL 0.9B"), std::string::npos) << r.output;

    hub_.clear_log();
    r = run("generate --model PaddlePaddle/PaddleOCR-VL --image " +
            (fs::path(FOLIO_FIXTURES_DIR) / "images" / "tall.png").string() +
            " --prompt OCR: --max-tokens 2");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_NE(
        r.output.find("folio-cli: model PaddlePaddle/PaddleOCR-VL at eeeeeee in the Hugging Face cache"),
        std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("request 0: 2 tokens"), std::string::npos) << r.output;
    EXPECT_EQ(hub_.n_requests(), 0u);
}
#endif

}  // namespace
}  // namespace folio::hub

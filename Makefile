# Two commands are the contract: `make demo` and `make test`. Both set up .venv from scratch.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

# For `make register` / `make unregister` against a real Nextcloud with a manual_install daemon.
OCC ?= sudo -u www-data php /var/www/nextcloud/occ
NEXTCLOUD_URL ?= http://nextcloud.local
APP_HOST ?= 127.0.0.1
APP_PORT ?= 23000
# No default secret (whoever knows it can act as any user): `make run` and `make register` generate one
# once into .app-secret (git-ignored, mode 0600) and both use it; APP_SECRET=... overrides it.
APP_SECRET_FILE := .app-secret
ifneq ($(filter run register,$(MAKECMDGOALS)),)
APP_SECRET ?= $(shell [ -s $(APP_SECRET_FILE) ] || (umask 077; $(PYTHON) -c 'import secrets; print(secrets.token_urlsafe(32))' > $(APP_SECRET_FILE)); cat $(APP_SECRET_FILE))
endif
APP_VERSION := $(shell sed -n 's:.*<version>\(.*\)</version>.*:\1:p' appinfo/info.xml | head -1)
# The routes and the rest come from appinfo/info.xml, as an app-store install takes them.
JSON_INFO = $(shell PYTHONPATH=. $(PY) -c 'import json, sys; from fake_nextcloud.appinfo import json_info; \
  print(json.dumps(json_info(sys.argv[1], int(sys.argv[2]))))' '$(APP_SECRET)' $(APP_PORT))

# The real-Nextcloud tier of the tests (tests/real) runs on a local Nextcloud 34 that nc-kit sets up once.
NC_KIT := ../shared/nextcloud-34-server/nc-kit
export REAL_NC_DIR ?= $(CURDIR)/.nextcloud
export REAL_NC_PORT ?= 8089

# The PHP companion app (search bar, one-request re-checks): docs/search-bar.md.
COMPANION := companion/semantic_search
COMPANION_VERSION := $(shell sed -n 's:.*<version>\(.*\)</version>.*:\1:p' $(COMPANION)/appinfo/info.xml | head -1)

# The app store's release archive: semantic_mcp/ with appinfo/info.xml (AppAPI reads the image and routes from it),
# the icons and screenshots, the licence and the changelog. The image itself is built and pushed by
# .github/workflows/release.yml on a tag v<version>.
APPSTORE_TARBALL := dist/semantic_mcp-$(APP_VERSION).tar.gz

.PHONY: appstore companion-package help venv test browser ocr-tools harp-tools real-nextcloud demo run register unregister bench bench-load bench-slice clean

help:
	@echo "make demo        run the app against the bundled fake Nextcloud with sample data"
	@echo "make test        run the test suite"
	@echo "make run         run the ExApp for a real Nextcloud (manual_install daemon)"
	@echo "make register    register it with that Nextcloud (OCC=..., NEXTCLOUD_URL=...; the secret is generated once)"
	@echo "make unregister  unregister it"
	@echo "make bench       run the benchmarks (slow: embeds the benchmark corpora once, then cached)"
	@echo "make appstore    build the app store's release archive in dist/ (the image: a v<version> tag, release.yml)"
	@echo "make companion-package  build the search-bar companion app's tarball for the app store in dist/"

$(STAMP): requirements.txt requirements-dev.txt requirements-rerank.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-rerank.txt
	touch $(STAMP)

venv: $(STAMP)

# Two workers: the fast tier on one, the HaRP and real tiers on the other (tests/conftest.py schedules them);
# the Nextcloud tiers mostly wait on PHP and Docker, so the two share 2 cores well.
TEST_WORKERS ?= 2
# TIER=unit|app|security|real|harp runs one tier (a folder of tests/); without it, all of them.
TIER ?=
test: $(STAMP) browser ocr-tools harp-tools real-nextcloud
	PYTHONPATH=lib:. $(PY) -m pytest -n $(TEST_WORKERS) $(if $(TIER),tests/$(TIER))

# Installs PHP from Debian's packages if missing (CI runs as root); ~1 min the first time, then reused.
real-nextcloud:
	@if [ -x $(NC_KIT) ]; then \
	  [ -f $(REAL_NC_DIR)/env.sh ] || $(NC_KIT) setup $(REAL_NC_DIR) $(REAL_NC_PORT); \
	else echo "$(NC_KIT) not found: the real-Nextcloud tier (tests/real) will be skipped"; fi

# The HaRP tier (tests/harp) deploys our image through HaRP with Docker; it needs Docker, debootstrap
# and haproxy (the front proxy) from Debian's packages (CI runs as root). Go and the images are
# built by tests/harp/build.sh, cached per machine. Without root or ../shared/harp the tier is skipped.
harp-tools:
	@if [ -d ../shared/harp ] && [ "$$(id -u)" = 0 ]; then \
	  command -v dockerd >/dev/null && command -v debootstrap >/dev/null && command -v haproxy >/dev/null || \
	  (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	    docker.io debootstrap haproxy); \
	else echo "not root or ../shared/harp missing: the HaRP tier (tests/harp) will be skipped"; fi

# OCR (tests/app/test_ocr.py, the app the real tier runs) uses Tesseract from Debian's packages, as the image does.
ocr-tools:
	@command -v tesseract >/dev/null 2>&1 && tesseract --list-langs 2>/dev/null | grep -q '^spa$$' || \
	  (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	    tesseract-ocr tesseract-ocr-eng tesseract-ocr-deu tesseract-ocr-fra tesseract-ocr-spa fonts-dejavu-core)

# The consent-page test drives Debian's chromium headless; install it once (CI runs as root).
browser:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -q && apt-get install -y -q --no-install-recommends chromium)

demo: $(STAMP)
	PYTHONPATH=lib:. $(PY) -m fake_nextcloud.demo

run: $(STAMP)
	APP_ID=semantic_mcp APP_VERSION=$(APP_VERSION) APP_SECRET=$(APP_SECRET) APP_HOST=$(APP_HOST) \
	APP_PORT=$(APP_PORT) NEXTCLOUD_URL=$(NEXTCLOUD_URL) APP_PERSISTENT_STORAGE=$${APP_PERSISTENT_STORAGE:-data} \
	PYTHONPATH=lib:. $(PY) -m ex_app.main

register: $(STAMP)
	$(OCC) app_api:daemon:register manual_install "Manual Install" manual-install http $(APP_HOST) $(NEXTCLOUD_URL) || true
	$(OCC) app_api:app:register semantic_mcp manual_install --json-info '$(JSON_INFO)' --wait-finish

unregister: $(STAMP)
	$(OCC) app_api:app:unregister semantic_mcp --silent --force || true

bench: $(STAMP)
	PYTHONPATH=lib:. $(PY) bench/retrieval_quality.py
	PYTHONPATH=lib:. $(PY) bench/rerank_quality.py
	PYTHONPATH=lib:. $(PY) bench/noise_queries.py
	PYTHONPATH=lib:. $(PY) bench/structured_items.py
	PYTHONPATH=lib:. $(PY) bench/cross_language.py
	PYTHONPATH=lib:. $(PY) bench/corpus_growth.py
	PYTHONPATH=lib:. $(PY) bench/pooled_sets.py
	PYTHONPATH=lib:. $(PY) bench/indexing.py
	PYTHONPATH=lib:. $(PY) bench/search_latency.py
	PYTHONPATH=lib:. $(PY) bench/skeleton_noise.py
	PYTHONPATH=lib:. $(PY) bench/org_scale.py
	PYTHONPATH=lib:. $(PY) bench/index_saving.py
	PYTHONPATH=lib:tests/support $(PY) bench/formats_quality.py

# Concurrent searches through a real Nextcloud's AppAPI proxy (the real tier's instance).
bench-load: $(STAMP) real-nextcloud
	PYTHONPATH=lib:. $(PY) bench/load.py

# 50 accounts on a real Nextcloud (its own instance in .nextcloud-bench), backfilled by the real ExApp;
# the PHP requests counted from the server's access log (issue 16).
bench-slice: $(STAMP)
	PYTHONPATH=lib:. $(PY) bench/real_slice.py

# The app store takes a tarball whose top folder is the app id; sign it with the app's certificate
# (occ integrity:sign-app, then openssl for the archive's signature: docs/search-bar.md).
companion-package:
	mkdir -p dist
	tar --sort=name --owner=0 --group=0 --mtime='2026-01-01 00:00Z' -C companion -czf \
	  dist/semantic_search-$(COMPANION_VERSION).tar.gz semantic_search
	@echo "dist/semantic_search-$(COMPANION_VERSION).tar.gz"

appstore:
	rm -rf dist/semantic_mcp && mkdir -p dist/semantic_mcp
	cp -r appinfo img LICENSE CHANGELOG.md README.md dist/semantic_mcp/
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='2026-01-01 00:00Z' \
	  -czf $(APPSTORE_TARBALL) -C dist semantic_mcp
	rm -rf dist/semantic_mcp
	@echo $(APPSTORE_TARBALL)

clean:
	@[ ! -x $(NC_KIT) ] || [ ! -d $(REAL_NC_DIR) ] || $(NC_KIT) stop $(REAL_NC_DIR)
	rm -rf $(VENV) .pytest_cache data dist .demo .nextcloud .nextcloud-harp .nextcloud-bench

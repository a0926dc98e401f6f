<?php

declare(strict_types=1);

namespace OCA\SemanticSearch\Search;

use OCA\SemanticSearch\AppInfo\Application;
use OCA\SemanticSearch\Service\Access;
use OCP\App\IAppManager;
use OCP\Files\IMimeTypeDetector;
use OCP\IDateTimeFormatter;
use OCP\IL10N;
use OCP\IURLGenerator;
use OCP\IUser;
use OCP\Search\IProvider;
use OCP\Search\ISearchQuery;
use OCP\Search\SearchResult;
use OCP\Search\SearchResultEntry;
use Psr\Log\LoggerInterface;

/**
 * Semantic MCP's hits in Nextcloud's search bar: the ExApp ranks (by meaning and by words, exact
 * titles first), this server decides what the user may open and how each item is named and linked.
 */
class Provider implements IProvider {
	/** The search bar never waits longer for the ExApp (AppAPI's own default is 3 s). */
	public const BUDGET_SECONDS = 2.0;
	/** Hits asked beyond a page, so that a page stays full when some are no longer openable. */
	public const SLACK = 5;
	/** The deepest the bar pages (a search bar, not an archive). */
	public const MAX_DEPTH = 100;

	private const ICONS = [
		'note' => ['core', 'filetypes/text.svg'],
		'deck_card' => ['deck', 'deck-dark.svg'],
		'calendar_event' => ['core', 'places/calendar.svg'],
		'contact' => ['core', 'places/contacts.svg'],
	];

	public function __construct(
		private IAppManager $appManager,
		private Access $access,
		private IURLGenerator $urlGenerator,
		private IMimeTypeDetector $mimeTypes,
		private IDateTimeFormatter $dates,
		private IL10N $l10n,
		private LoggerInterface $logger,
	) {
	}

	public function getId(): string {
		return Application::APP_ID;
	}

	public function getName(): string {
		return $this->l10n->t('By meaning');
	}

	public function getOrder(string $route, array $routeParameters): ?int {
		return 30; // after Files (5) and the apps' own providers, before the rest
	}

	public function search(IUser $user, ISearchQuery $query): SearchResult {
		$term = trim($query->getTerm());
		$offset = max(0, (int)($query->getCursor() ?? 0));
		$limit = max(1, $query->getLimit());
		if ($term === '' || $offset >= self::MAX_DEPTH) {
			return SearchResult::complete($this->getName(), []);
		}
		$uid = $user->getUID();
		$hits = $this->askExApp($uid, $term, min(self::MAX_DEPTH, $offset + $limit + self::SLACK));
		$entries = [];
		foreach ($hits as $hit) {
			$entry = $this->entry($uid, $hit);
			if ($entry !== null) {
				$entries[] = $entry;
			}
		}
		$entries = $this->exactTitlesFirst($entries, $term);
		$page = array_slice($entries, $offset, $limit);
		if ($offset + $limit < count($entries) || count($hits) >= $offset + $limit + self::SLACK) {
			return SearchResult::paginated($this->getName(), array_map(fn ($e) => $e[1], $page), $offset + $limit);
		}
		return SearchResult::complete($this->getName(), array_map(fn ($e) => $e[1], $page));
	}

	/**
	 * The ExApp's ranked hits for ``$uid``, or none (and the reason in the log) when it is missing,
	 * stopped, slow or answers something else. The user travels in AppAPI's signed headers only.
	 *
	 * @return list<array<string, mixed>>
	 */
	private function askExApp(string $uid, string $term, int $depth): array {
		if (!$this->appManager->isEnabledForUser('app_api') || !class_exists(\OCA\AppAPI\PublicFunctions::class)) {
			$this->logger->warning('Semantic Search shows nothing: AppAPI is not enabled.');
			return [];
		}
		$started = microtime(true);
		$response = \OCP\Server::get(\OCA\AppAPI\PublicFunctions::class)->exAppRequest(
			Application::EXAPP_ID, '/search-bar', $uid, 'POST', ['term' => $term, 'limit' => $depth],
			['timeout' => self::BUDGET_SECONDS, 'connect_timeout' => self::BUDGET_SECONDS],
		);
		$elapsed = round(microtime(true) - $started, 2);
		if (is_array($response)) {
			$this->logger->warning('Semantic Search shows nothing: Semantic MCP could not be asked ({error}; after {elapsed} s, the budget is {budget} s).',
				['budget' => self::BUDGET_SECONDS, 'error' => $response['error'] ?? 'no answer', 'elapsed' => $elapsed]);
			return [];
		}
		if ($response->getStatusCode() !== 200) {
			$this->logger->warning('Semantic Search shows nothing: Semantic MCP answered HTTP {status}.',
				['status' => $response->getStatusCode(), 'elapsed' => $elapsed]);
			return [];
		}
		$body = json_decode((string)$response->getBody(), true);
		if (!is_array($body) || !is_array($body['results'] ?? null)) {
			$this->logger->warning('Semantic Search shows nothing: Semantic MCP answered something that is not a result list.');
			return [];
		}
		return array_values(array_filter($body['results'], 'is_array'));
	}

	/**
	 * One hit as the search bar shows it, named and linked by this server, or null when the user
	 * cannot open it now.
	 *
	 * @return array{0: string, 1: SearchResultEntry}|null the title (for ranking) and the entry
	 */
	private function entry(string $uid, array $hit): ?array {
		$type = (string)($hit['type'] ?? '');
		$id = (string)($hit['id'] ?? '');
		$link = (string)($hit['link'] ?? '');
		$item = $this->access->open($uid, $type, $id);
		if ($item === null || !str_starts_with($link, '/') || str_starts_with($link, '//')) {
			return null;
		}
		$title = $item['title'] !== '' ? $item['title'] : (string)($hit['title'] ?? '');
		if ($type === 'note') {
			$title = preg_replace('/\.(md|txt)$/i', '', $title) ?? $title; // Notes names a note by its file
		}
		$subline = $this->subline($hit, $item);
		$icon = $item['mime'] !== null && $type === 'file'
			? $this->mimeTypes->mimeTypeIcon($item['mime'])
			: $this->icon($type);
		$url = $this->urlGenerator->getAbsoluteURL('/index.php' . $link);
		$entry = new SearchResultEntry('', $title, $subline, $url, $icon);
		$entry->addAttribute('type', $type);
		$entry->addAttribute('id', $id);
		return [$title, $entry];
	}

	/** Where in the item the hit is (page, slide, section, folder, board) and its date, if any. */
	private function subline(array $hit, array $item): string {
		$parts = [];
		$place = trim((string)($hit['place'] ?? ''));
		if ($place !== '') {
			$parts[] = $place;
		}
		if ($item['due'] !== null) {
			$parts[] = $this->l10n->t('Due %s', [$this->dates->formatDate($item['due'], 'medium')]);
		} elseif (is_int($hit['starts'] ?? null)) {
			$parts[] = $this->dates->formatDateTime($hit['starts'], 'medium', 'short');
		}
		return implode(' · ', $parts);
	}

	private function icon(string $type): string {
		[$app, $image] = self::ICONS[$type] ?? ['core', 'filetypes/text.svg'];
		try {
			return $this->urlGenerator->imagePath($app, $image);
		} catch (\RuntimeException) {
			return $this->urlGenerator->imagePath('core', 'filetypes/text.svg');
		}
	}

	/**
	 * Items whose whole title is the term first, then those whose title contains it, each group in the
	 * ExApp's order: what the other providers find by name is what the user expects first.
	 *
	 * @param list<array{0: string, 1: SearchResultEntry}> $entries
	 * @return list<array{0: string, 1: SearchResultEntry}>
	 */
	private function exactTitlesFirst(array $entries, string $term): array {
		$needle = mb_strtolower($term);
		$tiers = [[], [], []];
		foreach ($entries as $entry) {
			$title = mb_strtolower($entry[0]);
			$tiers[$title === $needle ? 0 : (str_contains($title, $needle) ? 1 : 2)][] = $entry;
		}
		return array_merge(...$tiers);
	}
}

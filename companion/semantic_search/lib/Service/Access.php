<?php

declare(strict_types=1);

namespace OCA\SemanticSearch\Service;

use OCP\Files\IRootFolder;
use OCP\Files\Node;
use Psr\Log\LoggerInterface;
use Sabre\VObject\Reader;

/**
 * What a user can open right now, asked of this server in process: the one place both the search
 * provider and the ExApp's re-check endpoint decide it, so they never disagree.
 *
 * Items are named as the ExApp names them: "note:<file id>", "file:<file id>", "deck_card:<card id>",
 * "calendar_event:<calendar uri>/<object uri>", "contact:<address book uri>/<card uri>", always in
 * the user's own view (a calendar shared with them appears under its "…_shared_by_…" uri).
 */
class Access {
	private const OWNER = '{http://owncloud.org/ns}owner-principal';
	private const DELETED_AT = '{http://nextcloud.com/ns}deleted-at';

	/** @var array<string, array<string, array{id: int, own: bool}>> per user: calendar or address book uri => it */
	private array $collections = [];

	public function __construct(
		private IRootFolder $rootFolder,
		private LoggerInterface $logger,
	) {
	}

	/**
	 * The item as ``$uid`` may open it now, or null (gone, no longer shared, never theirs).
	 *
	 * @return array{title: string, node: ?Node, mime: ?string, due: ?int}|null
	 */
	public function open(string $uid, string $type, string $id): ?array {
		try {
			return match ($type) {
				'file', 'note' => $this->node($uid, $id),
				'deck_card' => $this->card($uid, $id),
				'calendar_event' => $this->davObject($uid, 'calendar', $id),
				'contact' => $this->davObject($uid, 'contact', $id),
				default => null,
			};
		} catch (\Throwable $e) {
			// Whatever went wrong (an app gone, a row vanished mid-request), the item is not shown.
			$this->logger->info('Semantic Search could not re-check {type} {id} for {uid}: {reason}',
				['type' => $type, 'id' => $id, 'uid' => $uid, 'reason' => $e->getMessage()]);
			return null;
		}
	}

	private function node(string $uid, string $id): ?array {
		if (!ctype_digit($id)) {
			return null;
		}
		$node = $this->rootFolder->getUserFolder($uid)->getFirstNodeById((int)$id);
		if ($node === null || !$node->isReadable()) {
			return null;
		}
		return ['title' => $node->getName(), 'node' => $node, 'mime' => $node->getMimetype(), 'due' => null];
	}

	private function card(string $uid, string $id): ?array {
		if (!ctype_digit($id) || !class_exists(\OCA\Deck\Service\PermissionService::class)) {
			return null;
		}
		$cards = \OCP\Server::get(\OCA\Deck\Db\CardMapper::class);
		$permissions = \OCP\Server::get(\OCA\Deck\Service\PermissionService::class);
		// Throws when the card is gone, deleted, or on a board the user no longer shares.
		if (!$permissions->checkPermission($cards, (int)$id, \OCA\Deck\Db\Acl::PERMISSION_READ, $uid)) {
			return null;
		}
		$card = $cards->find((int)$id, false);
		$due = $card->getDuedate();
		return ['title' => $card->getTitle(), 'node' => null, 'mime' => null, 'due' => $due?->getTimestamp()];
	}

	private function davObject(string $uid, string $kind, string $id): ?array {
		[$collection, $object] = array_pad(explode('/', $id, 2), 2, '');
		if ($collection === '' || $object === '' || str_contains($object, '/')) {
			return null;
		}
		$found = $this->collections($uid, $kind)[$collection] ?? null;
		if ($found === null) {
			return null;
		}
		$collectionId = $found['id'];
		if ($kind === 'calendar') {
			$row = \OCP\Server::get(\OCA\DAV\CalDAV\CalDavBackend::class)->getCalendarObject($collectionId, $object);
			// The backend also returns objects in the trash bin; and a sharee sees no private event and only
			// "busy" of a confidential one (CalDAV censors them), so neither is shown by its title here.
			if (!is_array($row) || !empty($row['deleted_at'])
				|| (!$found['own'] && (int)($row['classification'] ?? 0) !== \OCA\DAV\CalDAV\CalDavBackend::CLASSIFICATION_PUBLIC)) {
				return null;
			}
			$data = $row['calendardata'] ?? null;
		} else {
			$row = \OCP\Server::get(\OCA\DAV\CardDAV\CardDavBackend::class)->getCard($collectionId, $object);
			$data = is_array($row) ? ($row['carddata'] ?? null) : null;
		}
		if (!is_string($data) || $data === '') {
			return null;
		}
		return ['title' => $this->davTitle($data, $kind), 'node' => null, 'mime' => null, 'due' => null];
	}

	/**
	 * The user's calendars or address books by the uri they see (their own, and those shared with them),
	 * calendars in the trash bin left out.
	 *
	 * @return array<string, array{id: int, own: bool}>
	 */
	private function collections(string $uid, string $kind): array {
		$key = $kind . ':' . $uid;
		if (!isset($this->collections[$key])) {
			$principal = 'principals/users/' . $uid;
			$rows = $kind === 'calendar'
				? \OCP\Server::get(\OCA\DAV\CalDAV\CalDavBackend::class)->getCalendarsForUser($principal)
				: \OCP\Server::get(\OCA\DAV\CardDAV\CardDavBackend::class)->getAddressBooksForUser($principal);
			$this->collections[$key] = [];
			foreach ($rows as $row) {
				if (!empty($row[self::DELETED_AT])) {
					continue;
				}
				$owner = (string)($row[self::OWNER] ?? $row['principaluri'] ?? '');
				$this->collections[$key][(string)$row['uri']] = ['id' => (int)$row['id'], 'own' => $owner === $principal];
			}
		}
		return $this->collections[$key];
	}

	private function davTitle(string $data, string $kind): string {
		$document = Reader::read($data, Reader::OPTION_FORGIVING);
		if ($kind === 'contact') {
			return trim((string)($document->FN ?? ''));
		}
		foreach (['VEVENT', 'VTODO'] as $component) {
			if (isset($document->{$component})) {
				return trim((string)($document->{$component}->SUMMARY ?? ''));
			}
		}
		return '';
	}
}

<?php

declare(strict_types=1);

namespace OCA\SemanticSearch\Listener;

use OCA\SemanticSearch\AppInfo\Application;
use OCP\App\IAppManager;
use OCP\EventDispatcher\Event;
use OCP\EventDispatcher\IEventListener;
use OCP\Files\Events\Node\NodeDeletedEvent;
use OCP\Files\Events\Node\NodeRenamedEvent;
use OCP\Files\FileInfo;
use OCP\Files\Node;
use Psr\Log\LoggerInterface;

/**
 * Tells the Semantic MCP ExApp, before the request that made the change answers, that someone may have
 * lost access to what others share with them: a share ended or was left, a member left or a group went,
 * an account was deleted, or an audited admin action (a team folder's groups, permissions or advanced
 * permissions) happened; Nextcloud sends no webhook for any of these. The ExApp then trusts no kept
 * verdict about a shared item given before now (ADR 0781), so a share that ends is gone from the next
 * search however busy Nextcloud is. A file moved or deleted (out of a shared folder, say) names itself:
 * only the verdicts about that file are distrusted, for everyone; a folder distrusts all shared ones.
 *
 * @template-implements IEventListener<Event>
 */
class AccessChanged implements IEventListener {
	/** The change's own request waits no longer for the ExApp. */
	public const BUDGET_SECONDS = 1.0;

	public function __construct(
		private IAppManager $appManager,
		private LoggerInterface $logger,
	) {
	}

	public function handle(Event $event): void {
		if (!$this->appManager->isEnabledForUser('app_api') || !class_exists(\OCA\AppAPI\PublicFunctions::class)) {
			return;
		}
		$name = (new \ReflectionClass($event))->getShortName();
		$params = ['event' => $name];
		if ($event instanceof NodeRenamedEvent || $event instanceof NodeDeletedEvent) {
			$file = self::fileId($event instanceof NodeRenamedEvent ? $event->getTarget() : $event->getNode());
			if ($file !== null) {
				$params['items'] = ['file:' . $file, 'note:' . $file]; // a note is its file (the Notes app's id)
			}
		}
		try {
			$response = \OCP\Server::get(\OCA\AppAPI\PublicFunctions::class)->exAppRequest(
				Application::EXAPP_ID, '/access-changed', null, 'POST', $params,
				['timeout' => self::BUDGET_SECONDS, 'connect_timeout' => self::BUDGET_SECONDS],
			);
		} catch (\Throwable $e) {
			$response = ['error' => $e->getMessage()];
		}
		if (is_array($response) || $response->getStatusCode() !== 204) {
			// Not fatal: the ExApp then serves a kept verdict at most its re-check window (10 s) old.
			$this->logger->warning('Semantic MCP was not told that access changed ({event}): {error}. It may show a '
				. 'shared item for up to its re-check window more; check that Semantic MCP is running.',
				['event' => $name, 'error' => is_array($response) ? ($response['error'] ?? 'no answer')
					: 'HTTP ' . $response->getStatusCode()]);
		}
	}

	/** A file's id, or null for a folder (its files are not named) or a node Nextcloud no longer describes. */
	private static function fileId(Node $node): ?int {
		try {
			return $node->getFileInfo()->getType() === FileInfo::TYPE_FILE ? $node->getId() : null;
		} catch (\Throwable) {
			return null;
		}
	}
}

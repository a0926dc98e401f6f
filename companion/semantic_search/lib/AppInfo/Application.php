<?php

declare(strict_types=1);

namespace OCA\SemanticSearch\AppInfo;

use OCA\SemanticSearch\Capabilities;
use OCA\SemanticSearch\Listener\AccessChanged;
use OCA\SemanticSearch\Search\Provider;
use OCP\AppFramework\App;
use OCP\AppFramework\Bootstrap\IBootContext;
use OCP\AppFramework\Bootstrap\IBootstrap;
use OCP\AppFramework\Bootstrap\IRegistrationContext;
use OCP\Files\Events\Node\NodeDeletedEvent;
use OCP\Files\Events\Node\NodeRenamedEvent;
use OCP\Group\Events\GroupDeletedEvent;
use OCP\Group\Events\UserRemovedEvent;
use OCP\Log\Audit\CriticalActionPerformedEvent;
use OCP\Share\Events\ShareDeletedEvent;
use OCP\Share\Events\ShareDeletedFromSelfEvent;
use OCP\User\Events\UserDeletedEvent;

class Application extends App implements IBootstrap {
	public const APP_ID = 'semantic_search';
	/** The ExApp this app shows and serves. */
	public const EXAPP_ID = 'semantic_mcp';

	public function __construct() {
		parent::__construct(self::APP_ID);
	}

	public function register(IRegistrationContext $context): void {
		$context->registerSearchProvider(Provider::class);
		$context->registerCapability(Capabilities::class);
		// Every way someone loses access to what others share, told to the ExApp at once (ADR 0781): webhooks
		// cover none of the first six, and a move or delete reaches it only for the one who made it, later.
		foreach ([ShareDeletedEvent::class, ShareDeletedFromSelfEvent::class, UserRemovedEvent::class,
			GroupDeletedEvent::class, UserDeletedEvent::class, CriticalActionPerformedEvent::class,
			NodeRenamedEvent::class, NodeDeletedEvent::class] as $event) {
			$context->registerEventListener($event, AccessChanged::class);
		}
	}

	public function boot(IBootContext $context): void {
	}
}

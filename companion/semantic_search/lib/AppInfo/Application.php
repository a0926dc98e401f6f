<?php

declare(strict_types=1);

namespace OCA\SemanticSearch\AppInfo;

use OCA\SemanticSearch\Capabilities;
use OCA\SemanticSearch\Search\Provider;
use OCP\AppFramework\App;
use OCP\AppFramework\Bootstrap\IBootContext;
use OCP\AppFramework\Bootstrap\IBootstrap;
use OCP\AppFramework\Bootstrap\IRegistrationContext;

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
	}

	public function boot(IBootContext $context): void {
	}
}

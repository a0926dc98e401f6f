<?php

declare(strict_types=1);

namespace OCA\SemanticSearch;

use OCA\SemanticSearch\AppInfo\Application;
use OCP\App\IAppManager;
use OCP\Capabilities\IPublicCapability;

/**
 * Tells the Semantic MCP ExApp that this app is enabled, so it re-checks through it. Public: the ExApp
 * asks as itself, with no user, and Nextcloud then lists public capabilities only.
 */
class Capabilities implements IPublicCapability {
	public function __construct(
		private IAppManager $appManager,
	) {
	}

	/** @return array{semantic_search: array{version: string, check: string, access_changes: bool}} */
	public function getCapabilities(): array {
		return [Application::APP_ID => [
			'version' => $this->appManager->getAppVersion(Application::APP_ID),
			'check' => '/ocs/v2.php/apps/' . Application::APP_ID . '/api/v1/check',
			// The ExApp is told at once when access to what others share may have ended (Listener\AccessChanged).
			'access_changes' => true,
		]];
	}
}

<?php

declare(strict_types=1);

namespace OCA\SemanticSearch\Controller;

use OCA\SemanticSearch\AppInfo\Application;
use OCA\SemanticSearch\Service\Access;
use OCP\AppFramework\Http;
use OCP\AppFramework\Http\Attribute\NoAdminRequired;
use OCP\AppFramework\Http\Attribute\NoCSRFRequired;
use OCP\AppFramework\Http\DataResponse;
use OCP\AppFramework\OCSController;
use OCP\IRequest;
use OCP\IUserSession;

/**
 * Re-checks, in one PHP request, a list of items for the user AppAPI signed the request for: the
 * Semantic MCP ExApp calls it before it serves its hits (instead of one request per source).
 */
class CheckController extends OCSController {
	/** More than any search asks for at once; a bigger list is refused rather than half answered. */
	public const MAX_ITEMS = 200;

	public function __construct(
		IRequest $request,
		private IUserSession $userSession,
		private Access $access,
	) {
		parent::__construct(Application::APP_ID, $request);
	}

	/**
	 * @param list<string> $items "<type>:<id>" as the ExApp names them
	 * @return DataResponse<Http::STATUS_OK, array{readable: array<string, bool>}, array{}>
	 *     |DataResponse<Http::STATUS_BAD_REQUEST|Http::STATUS_FORBIDDEN, array{message: string}, array{}>
	 */
	#[NoAdminRequired]
	#[NoCSRFRequired]
	public function check(array $items = []): DataResponse {
		$user = $this->userSession->getUser();
		// Only the ExApp, signed by AppAPI as this user (AppAPI logs the user in from those headers).
		if ($user === null || $this->request->getHeader('EX-APP-ID') !== Application::EXAPP_ID
			|| $this->request->getHeader('AUTHORIZATION-APP-API') === '') {
			return new DataResponse(['message' => 'Only the Semantic MCP app may call this endpoint.'], Http::STATUS_FORBIDDEN);
		}
		if (count($items) > self::MAX_ITEMS) {
			return new DataResponse(['message' => sprintf('At most %d items can be checked at once.', self::MAX_ITEMS)],
				Http::STATUS_BAD_REQUEST);
		}
		$readable = [];
		foreach ($items as $item) {
			if (!is_string($item) || !str_contains($item, ':')) {
				continue;
			}
			[$type, $id] = explode(':', $item, 2);
			$readable[$item] = $this->access->open($user->getUID(), $type, $id) !== null;
		}
		return new DataResponse(['readable' => $readable]);
	}
}

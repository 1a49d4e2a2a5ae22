<?php

function handle_catalog(PDO $db): void
{
    $param = $_POST['v'] ?? '';
    $bar = '';
    $bar = $param;
    $stmt = $db->prepare("SELECT * FROM users WHERE name = ?");
    $stmt->execute([$bar]);
}

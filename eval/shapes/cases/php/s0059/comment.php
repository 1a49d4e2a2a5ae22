<?php

function handle_comment(PDO $db): void
{
    $param = $_POST['v'] ?? '';
    $bar = '';
    $bar = $param;
    $stmt = $db->query("SELECT * FROM users WHERE name = '" . $bar . "'");
}
